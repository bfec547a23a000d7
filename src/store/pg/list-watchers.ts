import type { Sql } from "postgres";
import { ENTRIES_PER_NOTIFY } from "./log-follows.ts";

/** Where processes say that a live list is watched on them (`+<process>`) or no longer is (`-<process>`). */
export const LIST_WATCHERS_CHANNEL = "actuate_list_watchers";

/** Word of new executions for the lists of other processes: `<process>:<id>,<id>,…` (see ListWatchers). */
export const CREATED_CHANNEL = "actuate_execution_created";

const NOTIFY = "select pg_notify($1, $2)";

/** How often a process watching a list says so again, so that a process started since learns of it. */
const REFRESH_MS = 10_000;
/** A process not heard from for this long (it died without saying so) is told nothing more. */
const FORGET_MS = 3 * REFRESH_MS;

/**
 * Which other processes sharing the database watch a live list, as they announced: the claim and
 * admission writers send word of each batch of new executions only then, so a claim costs no NOTIFY
 * while no other process watches one (an INSERT trigger notified always, and cost invokes 15-25 % of
 * their throughput). Word goes on a channel of its own, not the one the update trigger uses: the
 * process that made the rows (and their followers) have them already. Best effort: a list that misses
 * a word, or whose process started after the last announcement, finds the rows at its poll.
 */
export class ListWatchers {
  private readonly self = crypto.randomUUID();
  /** The other processes watching a list, with when each last said so. */
  private readonly elsewhere = new Map<string, number>();
  private local = 0;
  private timer: Timer | null = null;

  constructor(
    private readonly client: Sql,
    private readonly now: () => number = Date.now,
  ) {}

  /** A list here starts (or stops) being watched: the others hear it now, and again every REFRESH_MS while any is. */
  watching(on: boolean): void {
    this.local = Math.max(0, this.local + (on ? 1 : -1));
    if (on && this.local === 1) {
      this.announce("+");
      this.timer = setInterval(() => this.announce("+"), REFRESH_MS).unref();
    } else if (!on && this.local === 0 && this.timer) {
      this.stopTimer();
      this.announce("-");
    }
  }

  /** An announcement heard on LIST_WATCHERS_CHANNEL (this process's own too). */
  heard(payload: string): void {
    const who = payload.slice(1);
    if (who === this.self) return;
    if (payload.startsWith("+")) this.elsewhere.set(who, this.now());
    else this.elsewhere.delete(who);
  }

  /** The ids of a word on CREATED_CHANNEL, unless this process sent it (or it is not one). */
  createdBy(payload: string): string[] {
    const colon = payload.indexOf(":");
    if (colon < 0 || payload.slice(0, colon) === this.self) return [];
    return payload.slice(colon + 1).split(",");
  }

  /** These executions were just made here (committed): word to the processes watching a list, if any. */
  created(made: Iterable<string>): void {
    if (this.elsewhere.size === 0 || !this.anyElsewhere()) return;
    const ids = [...made];
    for (let i = 0; i < ids.length; i += ENTRIES_PER_NOTIFY) {
      const payload = `${this.self}:${ids.slice(i, i + ENTRIES_PER_NOTIFY).join(",")}`;
      this.client.unsafe(NOTIFY, [CREATED_CHANNEL, payload], { prepare: true }).catch(() => {});
    }
  }

  /** Before the store closes: the others stop telling this process anything. */
  async close(): Promise<void> {
    if (!this.timer) return;
    this.stopTimer();
    await this.client.unsafe(NOTIFY, [LIST_WATCHERS_CHANNEL, `-${this.self}`], { prepare: true }).catch(() => {});
  }

  private anyElsewhere(): boolean {
    const heardSince = this.now() - FORGET_MS;
    for (const [who, at] of this.elsewhere) if (at < heardSince) this.elsewhere.delete(who);
    return this.elsewhere.size > 0;
  }

  private announce(sign: "+" | "-"): void {
    this.client.unsafe(NOTIFY, [LIST_WATCHERS_CHANNEL, `${sign}${this.self}`], { prepare: true }).catch(() => {});
  }

  private stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
