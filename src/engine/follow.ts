import type { ExecutionRow } from "../store/rows.ts";
import { isTerminal } from "../store/statuses.ts";
import type { ExecutionEvent, ExecutionFeed, FeedEvent } from "./execution-feed.ts";

/** How often a follower reads the row when nothing told it of a change: from `minMs`, doubling up to `maxMs`. */
export interface PollBackoff {
  minMs: number;
  maxMs: number;
}

export const DEFAULT_POLL: PollBackoff = { minMs: 25, maxMs: 1_000 };

export interface FollowResources {
  feed: ExecutionFeed;
  /** The stored row (another instance's progress is seen here). */
  read: (id: string) => Promise<ExecutionRow | null>;
  now: () => number;
  poll: PollBackoff;
}

export interface FollowOptions {
  /** Stop following at this time (epoch ms) even if the execution has not ended. */
  deadline?: number;
  /** Stop following when aborted (a socket closed, a caller went away). */
  signal?: AbortSignal;
}

/**
 * The events of one execution, wherever it runs: its status as first read, then every status change
 * and log line, ending with its end (or at the deadline, or when aborted). Events of this process come
 * from the feed at once, and so does word (PostgreSQL NOTIFY) that another instance changed the row,
 * which is then read at once. Otherwise the row is read again with backoff (`poll`): that covers SQLite
 * runs resumed after a restart and a missed notification (a listening connection being re-established).
 * The feed is listened to before the first read, so nothing between the two is missed. `first` reads the
 * row and may refuse (not the caller's).
 */
export async function* followExecution(
  $: FollowResources,
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
  try {
    let current = await first();
    yield { type: "status", execution: current };
    let delay = $.poll.minMs;
    const reread = async () => {
      const row = await $.read(id);
      if (!row || row.status === current.status) return null;
      current = row;
      return row;
    };
    while (!isTerminal(current.status) && !options.signal?.aborted) {
      const event = pending.shift();
      if (event?.type === "stored") {
        const row = await reread();
        if (row) yield { type: "status", execution: row };
        continue;
      }
      if (event) {
        if (event.type === "status") {
          if (event.execution.status === current.status) continue;
          current = event.execution;
        }
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
      delay = Math.min(delay * 2, $.poll.maxMs);
      const row = await reread();
      if (row) yield { type: "status", execution: row };
    }
  } finally {
    stop();
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
