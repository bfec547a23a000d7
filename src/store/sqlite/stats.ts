import type { Database } from "bun:sqlite";
import { foreground } from "../../lib/foreground.ts";
import { uuidV7Floor } from "../../lib/ids.ts";
import type { CreatedInBucket, FinishedInBucket, SeriesRange, SeriesReads } from "../stats.ts";
import { EXECUTION_STATUSES, type ExecutionStatus } from "../statuses.ts";

/**
 * The longest stretch of time one statement reads: a day of a million executions is 1,440 statements of
 * ~700 rows each, none holding the serving thread long.
 */
const SLICE_MS = 60_000;
/** How long the reads hold the serving thread before letting the requests waiting on it be answered. */
const HOLD_MS = 8;
/** How long they then wait for young requests to be answered (lib/foreground.ts), at most. */
const MAX_WAIT_MS = 4;

type Counts = Record<ExecutionStatus, number>;
type Finished = { finished: number; failed: number; durations: string | null };

/**
 * The series on SQLite, which answers on the serving thread: a GROUP BY over a day sorts every row in one
 * statement (seconds at a million: BENCHMARKS.md, "Stats series"), so each statement reads one slice of
 * the range (at most a minute) with aggregates that need no sort, and the thread is handed back between
 * slices. Percentiles: each bucket's durations, sorted here (SQLite has no percentile aggregate). The
 * slices are read at different moments: a commit between two is in one slice or the other, never both.
 */
export class SqliteSeriesReads implements SeriesReads {
  constructor(
    private readonly client: Database,
    private readonly environment: number,
  ) {}

  async createdByBucket(range: SeriesRange): Promise<CreatedInBucket[]> {
    const counts = EXECUTION_STATUSES.map((s) => `count(*) filter (where status = '${s}') as ${s}`).join(", ");
    const statement = this.client.query<Counts, [string, string, number, string | null]>(
      `select ${counts} from executions
       where id >= ?1 and id < ?2 and environment = ?3 and (?4 is null or action = ?4)`,
    );
    const totals = await this.eachBucket(
      range,
      () => ({}) as Partial<Counts>,
      (into, from, to) => {
        const row = statement.get(uuidV7Floor(from), uuidV7Floor(to), this.environment, range.action) as Counts;
        for (const status of EXECUTION_STATUSES) into[status] = (into[status] ?? 0) + row[status];
      },
      (counts) => counts,
    );
    return totals.flatMap((byStatus, bucket) =>
      EXECUTION_STATUSES.filter((status) => byStatus[status]).map((status) => ({
        bucket,
        status,
        count: byStatus[status] as number,
      })),
    );
  }

  async finishedByBucket(range: SeriesRange): Promise<FinishedInBucket[]> {
    const statement = this.client.query<Finished, [number, number, number, string | null]>(
      `select count(*) as finished, count(*) filter (where status = 'failed') as failed,
         group_concat(finished_at - created_at) as durations
       from executions
       where finished_at is not null and finished_at >= ?1 and finished_at < ?2 and environment = ?3
         and (?4 is null or action = ?4)`,
    );
    const buckets = await this.eachBucket(
      range,
      () => ({ finished: 0, failed: 0, durations: [] as string[] }),
      (into, from, to) => {
        const row = statement.get(from, to, this.environment, range.action) as Finished;
        into.finished += row.finished;
        into.failed += row.failed;
        if (row.durations !== null) into.durations.push(row.durations);
      },
      // Sorted as each bucket ends: a day's durations sorted at once held the thread ~100 ms.
      ({ finished, failed, durations }) => {
        if (finished === 0) return null;
        const sorted = Float64Array.from(durations.join(",").split(","), Number).sort();
        return { finished, failed, p50: nearestRank(sorted, 50), p95: nearestRank(sorted, 95) };
      },
    );
    return buckets.flatMap((row, bucket) => (row === null ? [] : [{ bucket, ...row }]));
  }

  /**
   * `read` of every slice of each bucket into that bucket's accumulator, then `end` of it, oldest first,
   * handing the thread back whenever it was held HOLD_MS.
   */
  private async eachBucket<A, R>(
    range: SeriesRange,
    start: () => A,
    read: (into: A, from: number, to: number) => void,
    end: (accumulated: A) => R,
  ): Promise<R[]> {
    const buckets: R[] = [];
    let held = performance.now();
    const handBack = async () => {
      if (performance.now() - held <= HOLD_MS) return;
      await foreground.giveWay(MAX_WAIT_MS);
      held = performance.now();
    };
    for (let at = range.since; at < range.until; at += range.stepMs) {
      const into = start();
      const until = Math.min(at + range.stepMs, range.until);
      for (let from = at; from < until; from += SLICE_MS) {
        read(into, from, Math.min(from + SLICE_MS, until));
        await handBack();
      }
      buckets.push(end(into));
      await handBack();
    }
    return buckets;
  }
}

/** The ceil(p·n)-th of `sorted` (nearest rank, PostgreSQL's `percentile_disc`). */
const nearestRank = (sorted: Float64Array, percent: number) =>
  sorted[Math.max(1, Math.ceil((percent * sorted.length) / 100)) - 1] as number;
