import { LoopFailures } from "../../lib/loop-failures.ts";
import type { SpanParent } from "../../observe/tracing.ts";
import type { ExecutionRow, RunRow } from "../../store/rows.ts";
import type { EngineResources } from "../resources.ts";
import { type PassOutcome, RunExecution } from "./run-execution.ts";

export interface WorkerSettings {
  /** Runs executing at once in this process. */
  concurrency: number;
  /** How long a lease lasts without renewal: a run whose process died is resumed this long after. */
  leaseMs: number;
  /** How often idle workers look for due runs (another instance's admissions, timers that fired elsewhere). */
  pollMs: number;
}

/**
 * Hosting mode's service loops (runtime/service-loops.ts), which claim the due runs of every environment
 * for the process and hand each to its environment's worker: a driven worker does not poll.
 */
export interface WorkflowDriver {
  /** A run suspended here is due (its wake timer fired): the process's claim should look now. */
  wake(): void;
  /** A run here ended: a slot is free (the process's claim looks again if it left due runs behind). */
  freed(): void;
}

/** A claimed run, with the instance whose expired lease the claim took over (store/runs.ts `ClaimedRun`). */
type TakenRun = RunRow & { takenFrom?: string | null };

/** Timers further off than this are left to the poll: a run may sleep for days. */
const MAX_TIMER_MS = 60_000;
const MAX_HEARTBEAT_MS = 2_000;

/**
 * The workflow workers of one server process. A run executes here while this process holds its lease:
 * taken at admission when a slot is free (the run starts at once, no claim needed), or claimed later by
 * the poll. Leases are renewed by one heartbeat statement for all runs held; a renewal that comes back
 * without a run means another worker took it over, and this pass stops writing.
 */
export class WorkflowWorker {
  /** The lease owner: this process, as the other instances sharing the database know it. */
  readonly owner: string;
  private readonly active = new Map<string, { execution: RunExecution; done: Promise<PassOutcome | null> }>();
  private readonly wakeTimers = new Set<Timer>();
  private reserved = 0;
  private claiming = false;
  private claimAgain = false;
  /** Some due run may be waiting for a slot: check again when one frees. */
  private backlog = true;
  private stopped = true;
  private pollTimer: Timer | null = null;
  private heartbeatTimer: Timer | null = null;
  /** Its store failures, its runs' included: an outage is told once, not once per run. */
  private readonly failures: LoopFailures;

  constructor(
    private readonly $: EngineResources,
    private readonly settings: WorkerSettings,
    /** Set in hosting mode: claims come from the process's service loops. */
    private readonly driver: WorkflowDriver | null = null,
  ) {
    this.owner = $.store.instances.id;
    this.failures = new LoopFailures("workflow worker", $.log);
  }

  start(): void {
    this.stopped = false;
    // Driven: the process's service loops renew every environment's leases in one statement.
    if (this.driver) return;
    const heartbeatMs = Math.min(Math.floor(this.settings.leaseMs / 3), MAX_HEARTBEAT_MS);
    this.heartbeatTimer = setInterval(() => this.heartbeat(), heartbeatMs);
    this.pollTimer = setInterval(() => this.kick(), this.settings.pollMs);
    this.kick();
  }

  /** Runs starting or running here now (what the process's claim subtracts from its slots). */
  busy(): number {
    return this.active.size + this.reserved;
  }

  /** Runs a run the process's service loops claimed for this environment; false once stopped (its lease runs out). */
  adopt(run: TakenRun): boolean {
    if (this.stopped) return false;
    this.noteTakeover(run);
    if (!this.active.has(run.id)) this.begin(run);
    return true;
  }

  /** A claim that took a run over from another instance's expired lease: told in the log and counted. */
  private noteTakeover(run: TakenRun): void {
    if (!run.takenFrom || run.takenFrom === this.owner) return;
    this.$.telemetry.workflowTakenOver();
    this.$.log(`workflow run ${run.id} taken over from instance ${run.takenFrom}, whose lease had expired`, {
      level: "warn",
      runId: run.id,
      takenFrom: run.takenFrom,
    });
  }

  leaseUntil(now: number): number {
    return now + this.settings.leaseMs;
  }

  /** A slot for a run this process is admitting, so it can start at once; false when every slot is busy. */
  reserve(): boolean {
    if (this.stopped || this.active.size + this.reserved >= this.settings.concurrency) {
      this.backlog = true;
      return false;
    }
    this.reserved++;
    return true;
  }

  unreserve(): void {
    this.reserved--;
  }

  /** Starts a run admitted with this process's lease in a reserved slot (with the execution admitted with it). */
  launch(run: RunRow, execution: ExecutionRow, parent?: SpanParent): void {
    this.reserved--;
    this.begin(run, execution, parent);
  }

  /** Stops a run this process executes at its next step boundary; false when it does not run here. */
  cancel(runId: string): boolean {
    const running = this.active.get(runId);
    running?.execution.halt("canceled");
    return running !== undefined;
  }

  /** Claims due runs for the free slots; concurrent calls fold into one more round. */
  kick(): void {
    if (this.stopped) return;
    if (this.driver) {
      this.driver.wake();
      return;
    }
    if (this.claiming) {
      this.claimAgain = true;
      return;
    }
    this.claiming = true;
    const begun = this.failures.begin();
    this.claimRounds()
      .catch((error) => this.failures.failed(error, { begun }))
      .finally(() => {
        this.claiming = false;
      });
  }

  /** Halts every run here, waits up to `graceMs` for the passes to stop, then lets go of their leases. */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    for (const timer of this.wakeTimers) clearTimeout(timer);
    this.wakeTimers.clear();
    const passes = [...this.active.values()];
    for (const { execution } of passes) execution.halt("shutdown");
    await Promise.race([Promise.allSettled(passes.map((p) => p.done)), Bun.sleep(graceMs)]);
    // Driven: the leases are the process's (of every environment), let go by its service loops once all stopped.
    if (this.driver) return;
    await this.$.store.runs.release(this.owner).catch((error) => this.failures.failed(error));
  }

  private async claimRounds(): Promise<void> {
    do {
      this.claimAgain = false;
      const free = this.settings.concurrency - this.active.size - this.reserved;
      if (free <= 0) {
        this.backlog = true;
        return;
      }
      const now = this.$.now();
      const runs = await this.$.store.runs.claim(this.owner, now, this.leaseUntil(now), free);
      this.failures.worked();
      this.backlog = runs.length === free;
      // A run whose lease ran out while its pass here went on (a stalled heartbeat) is ours again: let the pass go on.
      for (const run of runs) {
        this.noteTakeover(run);
        if (!this.active.has(run.id)) this.begin(run);
      }
    } while (this.claimAgain && !this.stopped);
  }

  /** `admitted`: the execution this process just admitted with the run (it has no checkpoints yet). */
  private begin(run: RunRow, admitted?: ExecutionRow, parent?: SpanParent): void {
    this.$.telemetry.runStarted((this.$.now() - run.wakeAt) / 1000);
    const execution = new RunExecution(run, this.owner, this.failures, this.$, admitted !== undefined, parent);
    const begun = this.failures.begin();
    const done = execution
      .execute()
      .then((outcome) => {
        this.after(run, outcome, admitted);
        return outcome;
      })
      .catch((error) => {
        // The lease runs out and the run is resumed from its checkpoints, here or elsewhere.
        this.failures.failed(error, { begun, about: { executionId: run.id } });
        return null;
      })
      .finally(() => {
        this.active.delete(run.id);
        if (this.driver) this.driver.freed();
        else if (this.backlog) this.kick();
      });
    this.active.set(run.id, { execution, done });
  }

  /** Wakes a suspended run when due; tells whoever follows the execution that the run ended. */
  private after(run: RunRow, outcome: PassOutcome, admitted?: ExecutionRow): void {
    if (outcome.kind === "suspended") this.wakeAt(outcome.wakeAt);
    if (outcome.kind !== "ended") return;
    const { status, finishedAt } = outcome.settlement;
    this.$.telemetry.executionEnded({
      action: run.workflow,
      kind: "workflow",
      status,
      createdAt: run.createdAt,
      startedAt: null,
      finishedAt,
    });
    if (!this.$.feed.watched(run.id)) return;
    const publish = (execution: ExecutionRow) => this.$.feed.publish(run.id, { type: "status", execution });
    if (admitted) publish({ ...admitted, ...outcome.settlement });
    else
      this.$.store.executions
        .get(run.id)
        .then((row) => row && publish(row))
        .catch(() => {});
  }

  /** A run suspended here is claimed again by a local timer when it is due soon (the poll covers the rest). */
  private wakeAt(at: number): void {
    const delay = at - this.$.now();
    if (delay > MAX_TIMER_MS || this.stopped) return;
    const timer = setTimeout(
      () => {
        this.wakeTimers.delete(timer);
        this.kick();
      },
      Math.max(0, delay),
    );
    this.wakeTimers.add(timer);
  }

  /** The runs executing here (whose leases the heartbeat renews). */
  held(): string[] {
    return [...this.active.keys()];
  }

  private async heartbeat(): Promise<void> {
    const ids = this.held();
    if (ids.length === 0) return;
    let held: { id: string; cancelRequested: boolean }[];
    const begun = this.failures.begin();
    try {
      held = await this.$.store.runs.renew(this.owner, ids, this.leaseUntil(this.$.now()));
    } catch (error) {
      this.failures.failed(error, { begun });
      return;
    }
    this.failures.worked();
    this.renewed(ids, held);
  }

  /**
   * What a renewal of `ids` answered (`held`: those still this process's, with whether a cancel was
   * asked; of any environment, so a driven worker is handed the answer for all): a run not held any
   * more is halted, one asked to cancel is canceled.
   */
  renewed(ids: string[], held: { id: string; cancelRequested: boolean }[]): void {
    const still = new Map(held.map((h) => [h.id, h.cancelRequested]));
    for (const id of ids) {
      const running = this.active.get(id);
      if (!running) continue;
      const cancelRequested = still.get(id);
      // Absent: the pass ended meanwhile (its row is no longer waiting) or another worker took the run over.
      if (cancelRequested === undefined) running.execution.halt("lease_lost");
      else if (cancelRequested) running.execution.halt("canceled");
    }
  }
}
