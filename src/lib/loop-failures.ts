import { isDatabaseUnavailable, loggable } from "./database-errors.ts";

/** Where a loop reports: the server's log (observe/log.ts `Log`, which lib may not import). */
export type LoopReport = (
  message: string,
  fields: { level: "info" | "warn" | "error" } & Record<string, unknown>,
) => void;

/**
 * What a background loop (a poll, a sweep, a heartbeat) says when its store calls fail. The database
 * away is told once when the outage begins (a warning) and once when a call works again, however many
 * ticks fail in between: an outage costs each loop two lines. Anything else is a bug, logged each time
 * with its stack. Never a failed statement's parameters (`loggable`). The loop itself goes on ticking.
 */
export class LoopFailures {
  private databaseAway = false;
  /** Outages told as ended so far. */
  private ended = 0;

  constructor(
    /** The loop, as the log names it: "execution retention", "workflow worker", … */
    private readonly loop: string,
    private readonly report: LoopReport,
  ) {}

  /**
   * Taken as a call begins, for `failed`: a call begun before the database came back (one that waited
   * for a connection meanwhile) and failing after belongs to the outage already told, not to a new one.
   */
  begin(): number {
    return this.ended;
  }

  /**
   * A call of the loop failed. `begun`: what `begin` answered as it began (by default, now); `about`:
   * what it was doing, when that matters (a run's id).
   */
  failed(
    error: unknown,
    { begun = this.ended, about = {} }: { begun?: number; about?: Record<string, unknown> } = {},
  ): void {
    if (!isDatabaseUnavailable(error)) {
      this.report(`${this.loop} failed: ${loggable(error)}`, { level: "error", ...about });
      return;
    }
    if (this.databaseAway || begun < this.ended) return;
    this.databaseAway = true;
    this.report(`${this.loop}: the database cannot be reached; trying again until it is back`, { level: "warn" });
  }

  /** A call of the loop worked: the end of an outage, if one was told. A comparison otherwise. */
  worked(): void {
    if (!this.databaseAway) return;
    this.databaseAway = false;
    this.ended++;
    this.report(`${this.loop}: the database is back`, { level: "info" });
  }
}
