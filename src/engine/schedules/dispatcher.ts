import { PublicError } from "../../lib/errors.ts";
import type { Principal } from "../../sdk/index.ts";
import type { ScheduledRow } from "../../store/rows.ts";
import type { Invoke } from "../invocation.ts";
import type { EngineResources } from "../resources.ts";
import { PassLoop } from "./pass-loop.ts";
import { RETRIED } from "./scheduler.ts";

/** What starting one delayed invocation needs of the engine. */
export interface DelayedInvocation {
  principal: Principal;
  action: string;
  requestId: string;
  input: unknown;
  /** The execution whose `ctx.schedule` made it (kept on the execution record). */
  scheduledBy: string;
}

export interface DispatcherSettings {
  owner: string;
  /** The longest sleep between passes: an invocation made on another instance starts within it of its time. */
  pollMs: number;
  leaseMs: number;
  /** How many due invocations one pass takes at most (the next pass follows at once when it took that many). */
  batch: number;
}

/**
 * Starts due delayed invocations (`ctx.schedule`) in this process. Every instance runs one; a claim
 * (a lease, skip-locked on PostgreSQL) gives each due invocation to one of them, which invokes it as the
 * principal that scheduled it with its request id and marks it started. An invocation started twice
 * (its holder died between the invoke and the mark, and the lease expired) is a replay: the request id
 * makes one execution.
 */
export class Dispatcher {
  private readonly loop: PassLoop;

  constructor(
    private readonly $: Pick<EngineResources, "store" | "log" | "now">,
    /** Engine.invoke, answering once the execution is claimed. */
    private readonly invoke: Invoke,
    /** Records a refused invocation as a failed execution (deferred work has no caller to tell); answers its id. */
    private readonly recordRefusal: (request: DelayedInvocation, refusal: PublicError) => Promise<string>,
    private readonly settings: DispatcherSettings,
  ) {
    this.loop = new PassLoop("delayed invocations", $.log, () => this.runPass(), settings.pollMs);
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One batch; answers how long to sleep before the next. */
  private async runPass(): Promise<number> {
    const { store, now } = this.$;
    const { owner, leaseMs, batch, pollMs } = this.settings;
    const at = now();
    const due = await store.delayedInvocations.claimDue(owner, at, at + leaseMs, batch);
    this.loop.worked();
    if (due.length > 0) {
      await this.startClaimed(due);
      if (due.length === batch) return 0;
    }
    const next = await store.delayedInvocations.nextDueAt();
    return next === null ? pollMs : Math.max(1, Math.min(pollMs, next - now()));
  }

  /**
   * Starts invocations claimed for this environment (by its own pass, or by hosting mode's service loops,
   * which claim for every environment) and marks those started.
   */
  async startClaimed(due: ScheduledRow[]): Promise<void> {
    const started = await Promise.all(due.map((row) => this.startOne(row)));
    const done = started.filter((s) => s !== null);
    await this.$.store.delayedInvocations.markStarted(this.settings.owner, done, this.$.now());
  }

  /** Invokes one; null when it could not be started now (the database), so its lease lets it be tried again. */
  private async startOne(row: ScheduledRow): Promise<{ id: string; executionId: string } | null> {
    const request: DelayedInvocation = {
      principal: {
        kind: row.principalKind,
        id: row.principalId,
        ...(row.principalClaims ? { claims: row.principalClaims } : {}),
      },
      action: row.action,
      requestId: row.requestId,
      input: row.input,
      scheduledBy: row.scheduledBy,
    };
    try {
      const outcome = await this.invoke({ ...request, waitMs: 0 });
      return { id: row.id, executionId: outcome.execution.id };
    } catch (error) {
      try {
        if (!(error instanceof PublicError)) {
          this.loop.failed(error, { scheduled: row.id });
        } else if (RETRIED.has(error.code)) {
          this.$.log(`delayed invocation ${row.id} (${row.action}) not started: ${error.message}; trying again`, {
            level: "warn",
          });
        } else {
          return { id: row.id, executionId: await this.recordRefusal(request, error) };
        }
      } catch (failure) {
        // Its refusal could not be recorded: tried again with the invocation.
        this.loop.failed(failure, { scheduled: row.id });
      }
      return null;
    }
  }
}
