import { PublicError } from "../../lib/errors.ts";
import type { LoadedSchedule } from "../../release/schedules.ts";
import type { Principal } from "../../sdk/index.ts";
import type { Invoke } from "../invocation.ts";
import type { EngineResources } from "../resources.ts";
import { PassLoop } from "./pass-loop.ts";
import { dueTicks, tickRequestId } from "./ticks.ts";

export interface SchedulerSettings {
  /** This process, as the owner of schedule claims. */
  owner: string;
  /** The longest sleep between passes (so a new release's schedules start ticking within it). */
  pollMs: number;
  /** How long a claim holds when its holder stops answering. */
  leaseMs: number;
}

/** Where this process believes a schedule stands, so it touches the database only when a tick is due. */
interface Known {
  lastTick: number;
  /** Another instance held the claim: look again then, in case it died before handling the tick. */
  recheckAt: number;
}

/** Refusals that pass: the tick is tried again by a later pass, not given up. */
export const RETRIED: ReadonlySet<string> = new Set(["database_unavailable", "no_active_release"]);

/** The service principal a schedule's ticks run as. */
export const schedulePrincipal = (name: string): Principal => ({ kind: "service", id: `schedule:${name}` });

/**
 * Fires the active release's schedules in this process. Every instance runs one; for each due schedule
 * they race for its claim (a lease), and the winner invokes the due ticks with their tick request ids,
 * records how far it got and lets go. A tick fired twice (a claim that expired under a slow holder, a
 * crash between the invoke and the record) is a replay: the normal idempotency runs it once.
 */
export class Scheduler {
  private readonly known = new Map<string, Known>();
  /** A schedule whose pass failed (the database) is tried again then, not in a tight loop. */
  private readonly retryAt = new Map<string, number>();
  private readonly loop: PassLoop;
  private halted = false;

  constructor(
    /** `release`: the release served now, whose schedules are the ones that tick. */
    private readonly $: Pick<EngineResources, "store" | "release" | "log" | "now">,
    /** Engine.invoke (passed in: the engine owns the scheduler). */
    private readonly invoke: Invoke,
    private readonly settings: SchedulerSettings,
  ) {
    this.loop = new PassLoop("schedule ticks", $.log, () => this.runPass(), settings.pollMs);
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    this.halted = true;
    return this.loop.stop();
  }

  /** Handles the due schedules; answers how long to sleep before the next pass. */
  private async runPass(): Promise<number> {
    const next = await this.pass();
    return Math.max(Math.min(this.settings.pollMs, next - this.$.now()), 1);
  }

  /**
   * Handles the due schedules now; answers when one is next due (+Infinity: none). The own loop's pass,
   * and hosting mode's, which the process's service loops call when the environment's tick is due.
   */
  async pass(): Promise<number> {
    // One read of the release: a switch replaces the whole set of schedules between passes.
    const schedules = [...(this.$.release()?.schedules.values() ?? [])];
    let next = Number.POSITIVE_INFINITY;
    for (const schedule of schedules) {
      if (this.halted) return this.$.now();
      if (this.dueAt(schedule) <= this.$.now()) {
        try {
          await this.handle(schedule);
          this.loop.worked();
          this.retryAt.delete(schedule.name);
        } catch (error) {
          if (error instanceof PublicError) {
            this.$.log(`schedule ${schedule.name}: ${error.message}; trying again`, { level: "warn" });
          } else {
            this.loop.failed(error, { schedule: schedule.name });
          }
          this.retryAt.set(schedule.name, this.$.now() + this.settings.pollMs);
        }
      }
      next = Math.min(next, this.dueAt(schedule));
    }
    return next;
  }

  /** When this process should next look at the schedule (at once when it knows nothing of it). */
  private dueAt(schedule: LoadedSchedule): number {
    const known = this.known.get(schedule.name);
    const due = known ? Math.min(schedule.nextAfter(known.lastTick) ?? Number.POSITIVE_INFINITY, known.recheckAt) : 0;
    return Math.max(due, this.retryAt.get(schedule.name) ?? 0);
  }

  private async handle(schedule: LoadedSchedule): Promise<void> {
    const { store } = this.$;
    const { owner, leaseMs } = this.settings;
    const now = this.$.now();
    const lastTick = await store.schedules.claim(schedule.name, owner, now, now + leaseMs);
    if (lastTick === null) {
      // Another instance is handling it; it will have handled what is due now.
      const handledUpTo = dueTicks(schedule, "latest", this.known.get(schedule.name)?.lastTick ?? now, now).handledUpTo;
      this.known.set(schedule.name, { lastTick: handledUpTo ?? now, recheckAt: now + leaseMs });
      return;
    }
    try {
      const { run, handledUpTo } = dueTicks(schedule, schedule.catchUp, lastTick, now);
      for (const tick of run) {
        await this.fire(schedule, tick);
        if (!(await store.schedules.advance(schedule.name, owner, tick))) return;
      }
      if (handledUpTo !== null && handledUpTo !== run.at(-1)) {
        if (!(await store.schedules.advance(schedule.name, owner, handledUpTo))) return;
      }
      this.known.set(schedule.name, { lastTick: handledUpTo ?? lastTick, recheckAt: Number.POSITIVE_INFINITY });
    } finally {
      await store.schedules.release(schedule.name, owner);
    }
  }

  /** Invokes one tick; answers once its execution is claimed (the run goes on by itself). */
  private async fire(schedule: LoadedSchedule, tick: number): Promise<void> {
    const at = new Date(tick).toISOString();
    try {
      const outcome = await this.invoke({
        principal: schedulePrincipal(schedule.name),
        action: schedule.action,
        requestId: tickRequestId(schedule.name, tick),
        input: schedule.input,
        waitMs: 0,
      });
      if (!outcome.replayed)
        this.$.log(`schedule ${schedule.name}: tick ${at} runs ${schedule.action} (${outcome.execution.id})`);
    } catch (error) {
      // Refused for good (the action went away or changed with a release switch, or the tick already ran
      // with another input): nothing to retry. Anything else (the database) is retried by the next pass.
      if (!(error instanceof PublicError) || RETRIED.has(error.code)) throw error;
      this.$.log(`schedule ${schedule.name}: tick ${at} not run: ${error.code}: ${error.message}`, { level: "warn" });
    }
  }
}
