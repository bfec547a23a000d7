import { isDatabaseUnavailable } from "../lib/database-errors.ts";
import type { LoopFailures } from "../lib/loop-failures.ts";
import type { ExecutionRow } from "../store/rows.ts";
import { isTerminal } from "../store/statuses.ts";
import type { ExecutionEvent, FeedEvent } from "./execution-feed.ts";
import type { EngineResources } from "./resources.ts";

/** How often a follower reads the row when nothing told it of a change: from `minMs`, doubling up to `maxMs`. */
export interface PollBackoff {
  minMs: number;
  maxMs: number;
}

export const DEFAULT_POLL: PollBackoff = { minMs: 25, maxMs: 1_000 };

/** Log lines a follower reads from the store at a time (the next read goes on from the last). */
const LOG_PAGE = 500;

/** What every follower in this process shares besides the engine's resources. */
export interface FollowSettings {
  poll: PollBackoff;
  /** Told when a poll meets the database away (once per outage for every follower) and when one reads again. */
  failures: LoopFailures;
}

export interface FollowOptions {
  /** Stop following at this time (epoch ms) even if the execution has not ended. */
  deadline?: number;
  /** Stop following when aborted (a socket closed, a caller went away). */
  signal?: AbortSignal;
  /**
   * Also the log lines stored by whichever instance runs it, read when word comes that lines past the
   * last one yielded are stored (PostgreSQL NOTIFY), whenever the row is read again (each poll, each
   * word of a change), and the last ones before the end; this process's lines come from the feed at
   * once. Off for followers that only want the end (`/result`, replays).
   */
  storedLogs?: boolean;
  /**
   * Only the log lines after this `seq`: a client resuming a stream it was following. An execution that
   * has ended then gives them too, before its end (without it, only its end).
   */
  afterSeq?: number;
}

/**
 * The events of one execution, wherever it runs: its status as first read, then every status change
 * and log line, ending with its end (or at the deadline, or when aborted). Events of this process come
 * from the feed at once, and so does word (PostgreSQL NOTIFY) that another instance changed the row or
 * stored lines, which are then read at once. Otherwise the row is read again with backoff (`poll`):
 * that covers SQLite runs resumed after a restart and a missed notification (a listening connection
 * being re-established).
 * A poll that finds the database away is tried again at the next one: following outlives an outage.
 * The feed is listened to before the first read, so nothing between the two is missed. `first` reads the
 * row and may refuse (not the caller's).
 */
export async function* followExecution(
  $: Pick<EngineResources, "feed" | "store" | "now">,
  { poll, failures }: FollowSettings,
  id: string,
  first: () => Promise<ExecutionRow>,
  options: FollowOptions = {},
): AsyncGenerator<ExecutionEvent> {
  const pending: FeedEvent[] = [];
  let wake: (() => void) | null = null;
  const stop = $.feed.subscribe(id, (event) => {
    pending.push(event);
    wake?.();
  });
  const aborted = () => wake?.();
  options.signal?.addEventListener("abort", aborted);
  let lastSeq = options.afterSeq ?? -1;
  let announced = false;
  /** Says that this execution's lines are followed here; whether it was said (the database away: polls read on). */
  const announce = async (following: boolean): Promise<boolean> => {
    try {
      await $.store.executions.followLogs(id, following);
      return true;
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      return false;
    }
  };
  /** Lines stored since the last one yielded (none unless `storedLogs`). */
  const storedLines = async (): Promise<ExecutionEvent[]> => {
    if (!options.storedLogs) return [];
    const rows = await $.store.executionLogs.page(id, lastSeq, LOG_PAGE);
    lastSeq = rows.at(-1)?.seq ?? lastSeq;
    return rows.map(({ executionId, line, at, seq }) => ({ type: "log", executionId, line, at, seq }));
  };
  try {
    let current = await first();
    if (isTerminal(current.status)) {
      // A follower resuming after a line it had missed the end too: the lines it missed come before it.
      if (options.afterSeq !== undefined) {
        for (let lines = await storedLines(); lines.length > 0; lines = await storedLines()) yield* lines;
      }
      yield { type: "status", execution: current };
      return;
    }
    // Before the first status (a caller may act on it) and the first read of the lines: lines stored
    // after that read are told of by whichever instance runs the execution.
    if (options.storedLogs) announced = await announce(true);
    yield { type: "status", execution: current };
    yield* await storedLines();
    let delay = poll.minMs;
    /** The row read again: new lines first, and, when it changed, its new status; nothing while the database is away. */
    const reread = async (): Promise<ExecutionEvent[]> => {
      let row: ExecutionRow | null;
      let lines: ExecutionEvent[];
      const begun = failures.begin();
      try {
        row = await $.store.executions.get(id);
        lines = await storedLines();
      } catch (error) {
        if (!isDatabaseUnavailable(error)) throw error;
        failures.failed(error, { begun });
        return [];
      }
      failures.worked();
      if (!row || row.status === current.status) return lines;
      current = row;
      return [...lines, { type: "status", execution: row }];
    };
    /** The stored lines up to `seq` not yet yielded (or those read before the database went away: polls read on). */
    const linesUpTo = async (seq: number): Promise<ExecutionEvent[]> => {
      const lines: ExecutionEvent[] = [];
      const begun = failures.begin();
      try {
        while (lastSeq < seq) {
          const page = await storedLines();
          if (page.length === 0) break;
          lines.push(...page);
        }
      } catch (error) {
        if (!isDatabaseUnavailable(error)) throw error;
        failures.failed(error, { begun });
        return lines;
      }
      failures.worked();
      return lines;
    };
    while (!isTerminal(current.status) && !options.signal?.aborted) {
      const event = pending.shift();
      if (event?.type === "stored") {
        yield* await reread();
        continue;
      }
      if (event?.type === "logged") {
        if (options.storedLogs && event.seq > lastSeq) yield* await linesUpTo(event.seq);
        continue;
      }
      if (event?.type === "log") {
        // Already read from the store (a line of this process stored before the feed was heard)?
        if (event.seq <= lastSeq) continue;
        lastSeq = event.seq;
        yield event;
        continue;
      }
      if (event) {
        if (event.execution.status === current.status) continue;
        if (isTerminal(event.execution.status)) {
          // This process publishes an end once it is stored: the database answered. Without this, a follower
          // ending this way after an outage would leave the outage told as still on (and the next one untold).
          failures.worked();
          yield* await storedLines();
        }
        current = event.execution;
        yield event;
        continue;
      }
      const left = (options.deadline ?? Number.POSITIVE_INFINITY) - $.now();
      if (left <= 0) return;
      const woken = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), Math.min(delay, left));
        wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
      });
      wake = null;
      if (woken) continue;
      delay = Math.min(delay * 2, poll.maxMs);
      yield* await reread();
    }
  } finally {
    stop();
    if (announced) void announce(false).catch(() => {});
    options.signal?.removeEventListener("abort", aborted);
  }
}

/** Follows until the execution ends or the deadline passes: the last row seen, and whether it had ended. */
export async function lastStatus(
  events: AsyncIterable<ExecutionEvent>,
): Promise<{ execution: ExecutionRow; settled: boolean }> {
  let execution: ExecutionRow | undefined;
  for await (const event of events) {
    if (event.type === "status") execution = event.execution;
  }
  if (!execution) throw new Error("an execution's events begin with its status");
  return { execution, settled: isTerminal(execution.status) };
}
