import type { Sql } from "postgres";

/** Where processes say they follow an execution's lines (`+<id>`) or no longer do (`-<id>`). */
export const FOLLOWS_CHANNEL = "actuate_execution_follows";

/** Word of stored lines: `<execution id>:<highest seq>` entries, comma-separated (see APPEND_LINES). */
export const LOGS_CHANNEL = "actuate_execution_logs";

const NOTIFY = "select pg_notify($1, $2)";

/** Entries a notification carries at most (a payload stays under 8000 bytes). */
export const ENTRIES_PER_NOTIFY = 150;

/** Executions remembered at most, each way (followers that died, runs that ended elsewhere, leave theirs). */
const MOST_REMEMBERED = 10_000;

/**
 * Which executions someone follows, on any instance sharing the database, as they announced: the log
 * writer sends word of an execution's stored lines only then, so an execution nobody follows costs no
 * NOTIFY. An announcement and a batch of lines may cross (the batch left before the announcement was
 * heard): then word goes after the batch's commit, and on hearing it, for the lines handed over before
 * (`appended`). An instance started after an announcement does not know of it: that follower reads the
 * lines at its polls (FOLLOW_POLL_MS), as after a missed notification.
 */
export class LogFollows {
  private readonly followers = new Map<string, number>();
  /** The highest seq handed to the writer, per execution with lines here. */
  private readonly handed = new Map<string, number>();

  constructor(private readonly client: Sql) {}

  /** Tells every instance (this one too, once committed) that a follower here starts or stops following. */
  async announce(executionId: string, following: boolean): Promise<void> {
    const payload = `${following ? "+" : "-"}${executionId}`;
    await this.client.unsafe(NOTIFY, [FOLLOWS_CHANNEL, payload], { prepare: true });
  }

  /** An announcement heard on FOLLOWS_CHANNEL. */
  heard(payload: string): void {
    const executionId = payload.slice(1);
    const starts = payload.startsWith("+");
    const count = (this.followers.get(executionId) ?? 0) + (starts ? 1 : -1);
    this.followers.delete(executionId);
    if (count > 0) remember(this.followers, executionId, count);
    const seq = this.handed.get(executionId);
    if (starts && seq !== undefined) this.tell([`${executionId}:${seq}`]);
  }

  followed(executionId: string): boolean {
    return this.followers.has(executionId);
  }

  /** Lines of this execution up to `seq` go to the writer. */
  appended(executionId: string, seq: number): void {
    this.handed.delete(executionId);
    remember(this.handed, executionId, seq);
  }

  /** Lines stored without word (the highest seq per execution, per item): word now for those followed since. */
  stored(items: Map<string, number>[]): void {
    if (this.followers.size === 0) return;
    const told = items.flatMap((upTo) => [...upTo].filter(([id]) => this.followed(id)).map(([id, s]) => `${id}:${s}`));
    if (told.length > 0) this.tell(told);
  }

  /** The execution ended here: its followers stop on their own, and their word may never come. */
  ended(executionId: string): void {
    this.followers.delete(executionId);
    this.handed.delete(executionId);
  }

  private tell(entries: string[]): void {
    for (let i = 0; i < entries.length; i += ENTRIES_PER_NOTIFY) {
      const payload = entries.slice(i, i + ENTRIES_PER_NOTIFY).join(",");
      // Best effort: a follower that misses it reads the lines at its next poll.
      this.client.unsafe(NOTIFY, [LOGS_CHANNEL, payload], { prepare: true }).catch(() => {});
    }
  }
}

/** Sets a key last in insertion order, forgetting the oldest past MOST_REMEMBERED. */
function remember(map: Map<string, number>, key: string, value: number): void {
  map.set(key, value);
  if (map.size > MOST_REMEMBERED) map.delete(map.keys().next().value as string);
}
