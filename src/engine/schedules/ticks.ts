import { uuidV5 } from "../../lib/ids.ts";
import type { LoadedSchedule } from "../../release/schedules.ts";
import type { CatchUp } from "../../sdk/index.ts";

/** At most this many missed ticks run for `catchUp: "all"` (the latest ones). */
export const MAX_CATCH_UP = 100;
/** Missed ticks are looked for this far back at most. */
export const LOOKBACK_MS = 24 * 3_600_000;
/** A tick found later than this counts as missed (what `catchUp: "none"` skips). */
export const ON_TIME_MS = 5_000;

// Fixed for ever: a tick's request id must be the same on every instance and after every upgrade.
const TICK_NAMESPACE = "3d4f5a62-7e0b-5c1d-9a8e-2b6c4d0e1f73";

/** The request id of a schedule's tick: the normal idempotency makes a tick run once, wherever it is fired. */
export const tickRequestId = (schedule: string, tickAt: number) =>
  uuidV5(TICK_NAMESPACE, `${schedule}@${new Date(tickAt).toISOString()}`);

export interface DueTicks {
  /** The ticks to run now, oldest first. */
  run: number[];
  /** The latest tick due (run or skipped): what the schedule has handled once these ran. */
  handledUpTo: number | null;
}

/** The ticks of `schedule` after `lastTick` and up to `now`, and which of them run under its catch-up policy. */
export function dueTicks(
  schedule: Pick<LoadedSchedule, "nextAfter">,
  catchUp: CatchUp,
  lastTick: number,
  now: number,
): DueTicks {
  const due: number[] = [];
  for (let t = schedule.nextAfter(Math.max(lastTick, now - LOOKBACK_MS)); t !== null && t <= now; ) {
    due.push(t);
    if (due.length > MAX_CATCH_UP) due.shift();
    t = schedule.nextAfter(t);
  }
  const latest = due.at(-1) ?? null;
  if (latest === null) return { run: [], handledUpTo: null };
  if (catchUp === "all") return { run: due, handledUpTo: latest };
  if (catchUp === "latest" || now - latest <= ON_TIME_MS) return { run: [latest], handledUpTo: latest };
  return { run: [], handledUpTo: latest };
}
