import { deleteEnvironment } from "../engine/control/delete-environment.ts";
import { Liveness } from "../engine/liveness.ts";
import { PassLoop } from "../engine/schedules/pass-loop.ts";
import type { WorkflowDriver } from "../engine/workflows/worker.ts";
import { SharedBytes } from "../files/shared-bytes.ts";
import type { Storage } from "../files/storage.ts";
import { LoopFailures } from "../lib/loop-failures.ts";
import type { Log } from "../observe/log.ts";
import type { Telemetry } from "../observe/telemetry.ts";
import type { EnvironmentRow, InEnvironment } from "../store/rows.ts";
import type { Store } from "../store/store.ts";
import type { EnvironmentRuntime } from "./environment.ts";
import type { EnvironmentRuntimes } from "./hosted-environments.ts";

/** The loops of a hosting process, each polling the database for every environment at once. */
export type LoopName =
  | "changes"
  | "workflows"
  | "leases"
  | "delayed"
  | "schedules"
  | "retention"
  | "expiry"
  | "heartbeat";

/** Per loop: how many turns it took, and how many database statements those turns sent. */
export type LoopCounts = Record<LoopName, { turns: number; queries: number }>;

export interface ServiceLoopSettings {
  /** RELEASE_POLL_MS: how often the environments' rows are read for changes (activations, deletes). */
  changesMs: number;
  /** The workflow workers' settings (WORKFLOW_*): the process's slots, its leases, its longest sleep. */
  workflows: { concurrency: number; leaseMs: number; pollMs: number };
  /** EXECUTION_RETENTION; null: executions are kept. */
  retentionMs: number | null;
  /** EXPIRY_SWEEP_MS: how often the environments whose TTL passed are looked for (and deleted); default a minute. */
  expiryMs?: number;
}

/** What the loops need of the hosting process. */
export interface LoopHost extends EnvironmentRuntimes {
  /** The runtimes composed now. */
  all(): EnvironmentRuntime[];
  /** Whether this instance serves the environment of this row (SERVE_ENVIRONMENTS). */
  served(row: EnvironmentRow): Promise<boolean>;
}

/**
 * A delete's first step: no active release, its revision bumped (a new environment has revision 0;
 * every activation names a release).
 */
const deleting = (row: EnvironmentRow) => row.activeVersion === null && row.revision > 0;

/** How many delayed invocations, and environments' schedule passes, one turn takes at most. */
const DELAYED_BATCH = 256;
const SCHEDULE_BATCH = 16;
const RETENTION_BATCH = 500;
/** Expired environments one sweep takes at most, and how long one instance holds them while it deletes them. */
const EXPIRY_BATCH = 16;
const EXPIRY_LEASE_MS = 10 * 60_000;
/** The longest wait between two renewals of the leases held (as the own worker's heartbeat). */
const MAX_HEARTBEAT_MS = 2_000;

/**
 * Hosting mode's one set of loops for the process (docs/decisions/hosting-runtime.md): the instance's
 * heartbeat, the poll of the environments' rows (active releases, deletes), and one claim each for due
 * workflow runs, delayed invocations and schedule ticks of every environment, each claimed row handed to
 * its environment's runtime (composed on demand), and one retention sweep. Their database statements per
 * turn do not depend on how many environments exist or are composed. The environments' engines are
 * driven (`loops: driver`): they poll nothing themselves.
 */
export class ServiceLoops {
  /** Statements sent per loop (read by tests and the figures in hosting-runtime.md). */
  readonly counts: LoopCounts = {
    changes: { turns: 0, queries: 0 },
    workflows: { turns: 0, queries: 0 },
    leases: { turns: 0, queries: 0 },
    delayed: { turns: 0, queries: 0 },
    schedules: { turns: 0, queries: 0 },
    retention: { turns: 0, queries: 0 },
    expiry: { turns: 0, queries: 0 },
    heartbeat: { turns: 0, queries: 0 },
  };
  /** The driver every environment's workflow worker is given. */
  readonly driver: WorkflowDriver = {
    wake: () => this.claimRuns(),
    freed: () => {
      if (this.backlog) this.claimRuns();
    },
  };
  private readonly owner: string;
  private readonly liveness: Liveness;
  /** Environments whose due work this instance leaves to others: not served here, or gone. */
  private readonly skip = new Set<number>();
  private lastChange = -1;
  private readonly timers: Timer[] = [];
  private stopped = true;
  private claiming: Promise<void> | null = null;
  private renewing: Promise<void> | null = null;
  private claimAgain = false;
  private backlog = false;
  private changing: Promise<void> | null = null;
  private sweeping: Promise<void> | null = null;
  private expiring: Promise<void> | null = null;
  private readonly delayed: PassLoop;
  private readonly schedules: PassLoop;
  private readonly failures: Record<"changes" | "workflows" | "retention" | "expiry", LoopFailures>;

  constructor(
    private readonly $: { store: Store; storage: Storage; log: Log; now: () => number; telemetry?: Telemetry },
    private readonly host: LoopHost,
    private readonly settings: ServiceLoopSettings,
  ) {
    this.owner = $.store.instances.id;
    const counted = this.counted("heartbeat", $.store.instances, ["keepAlive"]);
    this.liveness = new Liveness(
      { store: { instances: counted } as Store, log: $.log, now: $.now, telemetry: $.telemetry },
      settings.workflows.leaseMs,
    );
    this.delayed = new PassLoop("delayed invocations", $.log, () => this.delayedPass(), settings.workflows.pollMs);
    this.schedules = new PassLoop("schedule ticks", $.log, () => this.schedulePass(), settings.workflows.pollMs);
    this.failures = {
      changes: new LoopFailures("environment changes", $.log),
      workflows: new LoopFailures("workflow worker", $.log),
      retention: new LoopFailures("execution retention", $.log),
      expiry: new LoopFailures("environment expiry", $.log),
    };
  }

  /**
   * Beats once (this process is alive before any environment's work runs here) and reads every
   * environment's row once (which are served here); then the loops run.
   */
  async start(): Promise<void> {
    await this.liveness.start();
    try {
      await this.readChanges();
    } catch (error) {
      await this.liveness.stop();
      throw error;
    }
    this.stopped = false;
    const every = (ms: number, turn: () => void) => {
      const timer = setInterval(turn, ms);
      this.timers.push(timer);
    };
    every(this.settings.changesMs, () => this.pollChanges());
    every(this.settings.workflows.pollMs, () => this.claimRuns());
    every(Math.min(Math.floor(this.settings.workflows.leaseMs / 3), MAX_HEARTBEAT_MS), () => this.renewLeases());
    const { retentionMs } = this.settings;
    if (retentionMs !== null) {
      every(Math.min(Math.max(retentionMs / 10, 1_000), 3_600_000), () => this.sweep());
      this.sweep();
    }
    every(this.settings.expiryMs ?? 60_000, () => this.expire());
    this.claimRuns();
    this.delayed.start();
    this.schedules.start();
  }

  /** Stops claiming (the environments' engines are stopped after this, then `retire`). */
  async halt(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearInterval(timer);
    await Promise.all([
      this.delayed.stop(),
      this.schedules.stop(),
      this.claiming,
      this.changing,
      this.sweeping,
      this.expiring,
      this.renewing,
    ]);
  }

  /** Once every environment's engine stopped: lets go of this process's leases and says it is gone. */
  async retire(): Promise<void> {
    await this.$.store.runs.release(this.owner).catch((error) => this.failures.workflows.failed(error));
    await this.liveness.stop();
  }

  /** One look at the environments' rows now (as the poll does), e.g. after this instance changed one. */
  pollChanges(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.changing ??= this.readChanges()
      .then(
        () => this.failures.changes.worked(),
        (error) => this.failures.changes.failed(error),
      )
      .finally(() => {
        this.changing = null;
      });
    return this.changing;
  }

  /** A look that starts after now (one under way may have read before a change this instance just made). */
  async pollChangesFresh(): Promise<void> {
    await this.changing;
    await this.pollChanges();
  }

  /**
   * The environments' rows changed since the last look: a composed environment's new active release is
   * loaded, one being deleted (no active release) or gone is evicted, and what is served here is noted.
   * The first look reads every row (which environments this instance leaves to others).
   */
  private readChanges(): Promise<void> {
    return this.counting("changes", (query) => this.readChangesCounted(query));
  }

  private async readChangesCounted(query: () => void): Promise<void> {
    const first = this.lastChange < 0;
    const { environments } = this.$.store.control;
    query();
    const rows = await environments.changedSince(Math.max(this.lastChange, 0));
    for (const row of rows) {
      this.lastChange = Math.max(this.lastChange, row.changed);
      if (await this.host.served(row)) this.skip.delete(row.id);
      else this.skip.add(row.id);
    }
    if (first) {
      this.lastChange = Math.max(this.lastChange, 0);
      return;
    }
    if (rows.length === 0) return;
    const composed = new Map(this.host.all().map((runtime) => [runtime.site.id, runtime]));
    const work: Promise<void>[] = [];
    for (const row of rows) {
      const runtime = composed.get(row.id);
      if (!runtime) continue;
      work.push(deleting(row) ? this.evict(row.id) : runtime.releases.reload());
    }
    // A delete that ended between two looks leaves no row to read: the composed ones still there are asked for.
    if (composed.size > 0) {
      query();
      const present = new Set(await environments.present([...composed.keys()]));
      for (const id of composed.keys()) if (!present.has(id)) work.push(this.evict(id));
    }
    await Promise.all(work);
  }

  private async evict(id: number): Promise<void> {
    this.skip.add(id);
    await this.host.evict(id);
  }

  /** Claims due runs of every environment for the free slots; concurrent calls fold into one more round. */
  private claimRuns(): void {
    if (this.stopped) return;
    if (this.claiming) {
      this.claimAgain = true;
      return;
    }
    const begun = this.failures.workflows.begin();
    this.claiming = this.claimRounds()
      .catch((error) => this.failures.workflows.failed(error, { begun }))
      .finally(() => {
        this.claiming = null;
      });
  }

  private async claimRounds(): Promise<void> {
    const { concurrency, leaseMs } = this.settings.workflows;
    do {
      this.claimAgain = false;
      let busy = 0;
      for (const runtime of this.host.all()) busy += runtime.engine.busyRuns();
      const free = concurrency - busy;
      if (free <= 0) {
        this.backlog = true;
        return;
      }
      const now = this.$.now();
      const runs = await this.counting("workflows", async (query) => {
        query();
        return this.$.store.runs.claimAcross(this.owner, now, now + leaseMs, free, [...this.skip]);
      });
      this.failures.workflows.worked();
      this.backlog = runs.length === free;
      await this.handOver(runs, async (runtime, claimed) => {
        // One it cannot run (its environment stopped meanwhile) waits for its lease to run out.
        for (const run of claimed) runtime.engine.runClaimed(run);
      });
    } while (this.claimAgain && !this.stopped);
  }

  /**
   * Renews the leases of every run executing in this process, whatever its environment, in one
   * statement, and tells each environment's worker what came back. Idle (no run held): no statement.
   */
  private renewLeases(): void {
    const held = this.host.all().map((runtime) => ({ engine: runtime.engine, ids: runtime.engine.heldRuns() }));
    const ids = held.flatMap((some) => some.ids);
    if (ids.length === 0 || this.renewing) return;
    const begun = this.failures.workflows.begin();
    const until = this.$.now() + this.settings.workflows.leaseMs;
    this.renewing = this.counting("leases", (query) => {
      query();
      return this.$.store.runs.renew(this.owner, ids, until);
    })
      .then((renewed) => {
        this.failures.workflows.worked();
        for (const { engine, ids } of held) engine.leasesRenewed(ids, renewed);
      })
      .catch((error) => this.failures.workflows.failed(error, { begun }))
      .finally(() => {
        this.renewing = null;
      });
  }

  /** One batch of due delayed invocations of every environment; answers how long to sleep. */
  private delayedPass(): Promise<number> {
    return this.counting("delayed", (query) => this.delayedPassCounted(query));
  }

  private async delayedPassCounted(query: () => void): Promise<number> {
    const { store, now } = this.$;
    const { leaseMs, pollMs } = this.settings.workflows;
    const at = now();
    const skip = [...this.skip];
    query();
    const due = await store.delayedInvocations.claimDueAcross(this.owner, at, at + leaseMs, DELAYED_BATCH, skip);
    this.delayed.worked();
    if (due.length > 0) {
      await this.handOver(due, (runtime, claimed) => runtime.engine.scheduling.startClaimed(claimed));
      if (due.length === DELAYED_BATCH) return 0;
    }
    query();
    const next = await store.delayedInvocations.nextDueAtAcross(skip);
    return next === null ? pollMs : Math.max(1, Math.min(pollMs, next - now()));
  }

  /**
   * The environments whose next schedule tick is due (`next_tick_at`, taken for a lease's time so one
   * instance runs each): each one's pass fires its due ticks, then its next tick is stored.
   */
  private schedulePass(): Promise<number> {
    return this.counting("schedules", (query) => this.schedulePassCounted(query));
  }

  private async schedulePassCounted(query: () => void): Promise<number> {
    const { store, now } = this.$;
    const { leaseMs, pollMs } = this.settings.workflows;
    const at = now();
    const skip = [...this.skip];
    query();
    const due = await store.schedules.claimDueEnvironments(at, at + leaseMs, SCHEDULE_BATCH, skip);
    this.schedules.worked();
    await Promise.all(
      due.map(async (id) => {
        const runtime = await this.host.runtimeOf(id);
        if (!runtime) {
          this.skip.add(id);
          return;
        }
        const next = await runtime.engine.scheduling.passNow();
        await store.environment(id).schedules.setNextTick(next);
      }),
    );
    if (due.length === SCHEDULE_BATCH) return 0;
    query();
    const next = await store.schedules.nextTickAt(skip);
    return next === null ? pollMs : Math.max(1, Math.min(pollMs, next - now()));
  }

  /** Retention's sweep over every environment: each forgotten upload's bytes dropped from its own storage. */
  private sweep(): void {
    const keepMs = this.settings.retentionMs;
    if (keepMs === null || this.sweeping) return;
    this.sweeping = this.pruneAll(keepMs)
      .then(
        () => this.failures.retention.worked(),
        (error) => this.failures.retention.failed(error),
      )
      .finally(() => {
        this.sweeping = null;
      });
  }

  private pruneAll(keepMs: number): Promise<void> {
    return this.counting("retention", (query) => this.pruneAllCounted(keepMs, query));
  }

  private async pruneAllCounted(keepMs: number, query: () => void): Promise<void> {
    const before = this.$.now() - keepMs;
    // Bytes a fork (or its source) still reads are handed to it, not deleted.
    const shared = new SharedBytes(this.$.store, this.$.storage);
    const drop = (environment: number, paths: string[]) => shared.dropBytesAt(environment, paths);
    let total = 0;
    for (;;) {
      query();
      const pruned = await this.$.store.retention.pruneFinishedAcross(before, RETENTION_BATCH, drop);
      total += pruned;
      if (pruned < RETENTION_BATCH || this.stopped) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (total > 0)
      this.$.log(`retention: forgot ${total} executions that ended before ${new Date(before).toISOString()}`);
  }

  /**
   * Deletes the environments whose TTL passed (a fork's `--ttl`), as `env delete --yes` does: each one
   * claimed for a while first (`claimExpired`), so one instance deletes it; stopped midway, it is due again
   * once that claim runs out, and the delete finishes the job.
   */
  private expire(): void {
    if (this.stopped || this.expiring) return;
    this.expiring = this.counting("expiry", (query) => this.expireCounted(query))
      .then(
        () => this.failures.expiry.worked(),
        (error) => this.failures.expiry.failed(error),
      )
      .finally(() => {
        this.expiring = null;
      });
  }

  private async expireCounted(query: () => void): Promise<void> {
    const at = this.$.now();
    query();
    const expired = await this.$.store.control.environments.claimExpired(at, at + EXPIRY_LEASE_MS, EXPIRY_BATCH);
    for (const row of expired) {
      if (this.stopped) return;
      await this.evict(row.id);
      const removed = await deleteEnvironment(this.$.store, this.$.storage, row.id);
      if (!removed) continue;
      const rows = Object.values(removed).reduce((sum, n) => sum + n, 0);
      const forked = row.forkedFrom === null ? "" : ` (forked from ${row.forkedFrom})`;
      this.$.log(`expiry: deleted environment ${row.handle}${forked}, its time to live over: ${rows} rows removed`);
    }
  }

  /**
   * Hands claimed rows to their environments' runtimes, composed on demand, each environment's at once;
   * an environment not served here (or gone) is skipped from then on, its rows' leases left to run out.
   */
  private async handOver<Row>(
    rows: InEnvironment<Row>[],
    run: (runtime: EnvironmentRuntime, rows: InEnvironment<Row>[]) => Promise<void>,
  ): Promise<void> {
    const byEnvironment = Map.groupBy(rows, (row) => row.environment);
    await Promise.all(
      [...byEnvironment].map(async ([id, claimed]) => {
        const runtime = await this.host.runtimeOf(id);
        if (!runtime) {
          this.skip.add(id);
          return;
        }
        await run(runtime, claimed);
      }),
    );
  }

  /** A turn of `loop`: its statements (told to `query`) are counted with it once it ends. */
  private async counting<T>(loop: LoopName, turn: (query: () => void) => Promise<T>): Promise<T> {
    let queries = 0;
    try {
      return await turn(() => queries++);
    } finally {
      this.counts[loop].turns++;
      this.counts[loop].queries += queries;
    }
  }

  /** `target` with each call of its `methods` counted as a turn of the `loop` and one statement. */
  private counted<T extends object>(loop: LoopName, target: T, methods: (keyof T)[]): T {
    const counts = this.counts[loop];
    return new Proxy(target, {
      get(object, key, receiver) {
        const value = Reflect.get(object, key, receiver);
        if (!methods.includes(key as keyof T) || typeof value !== "function") return value;
        return (...args: unknown[]) => {
          counts.turns++;
          counts.queries++;
          return value.apply(object, args);
        };
      },
    });
  }
}
