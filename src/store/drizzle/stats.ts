import { type AnyColumn, and, asc, desc, eq, gte, isNotNull, lt, type SQL, sql } from "drizzle-orm";
import { uuidV7Floor } from "../../lib/ids.ts";
import type { CreatedInBucket, FinishedInBucket, SeriesRange, StatsStore } from "../stats.ts";
import type { ExecutionStatus, RunStatus } from "../statuses.ts";
import type { SharedDatabase, SharedTables } from "./database.ts";

/**
 * A whole number written into the statement: a bucket's expression must be the same text wherever it is
 * repeated (PostgreSQL takes `$1` and `$3` for two expressions), and integer arithmetic on both databases
 * (SQLite divides a bound JavaScript number as a real).
 */
function integer(value: number): SQL {
  if (!Number.isSafeInteger(value)) throw new Error(`not a whole number: ${value}`);
  return sql.raw(String(value));
}

/** The index of the bucket `column`'s time falls in (integer division: both databases truncate). */
const bucketOf = (column: AnyColumn, range: SeriesRange) =>
  sql<number>`cast((${column} - ${integer(range.since)}) / ${integer(range.stepMs)} as integer)`;

/**
 * How the database ranks a bucket's durations: PostgreSQL's `percentile_disc` aggregate; or, on SQLite,
 * which has no percentile aggregate, each bucket's durations as one sorted list of text that the ranks are
 * read from (measured cheaper than window functions' ranks: bench/stats-series.ts, BENCHMARKS.md).
 */
export type PercentileSource = "percentile_disc" | "sorted_list";

/**
 * The nearest-rank percentile (the ceil(p·n)-th value; `percentile_disc`'s definition) of `count` numbers
 * listed in order in `sorted`, comma-separated: found by counting commas, nothing split.
 */
function nearestRank(sorted: string, count: number, percent: number): number {
  const rank = Math.max(1, Math.ceil((percent * count) / 100));
  let start = 0;
  for (let i = 1; i < rank; i++) start = sorted.indexOf(",", start) + 1;
  const end = sorted.indexOf(",", start);
  return Number(sorted.slice(start, end === -1 ? undefined : end));
}

/** One environment's counts: each the environment's rows in the id range (ids are unique across environments). */
export class DrizzleStatsStore implements StatsStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Pick<SharedTables, "executions" | "workflowRuns">,
    private readonly environment: number,
    private readonly percentiles: PercentileSource,
  ) {}

  executionsByStatus(sinceId: string): Promise<Partial<Record<ExecutionStatus, number>>> {
    return this.countByStatus(this.t.executions, sinceId);
  }

  runsByStatus(sinceId: string): Promise<Partial<Record<RunStatus, number>>> {
    return this.countByStatus(this.t.workflowRuns, sinceId);
  }

  async failingActions(sinceId: string, limit: number): Promise<{ action: string; failed: number }[]> {
    const { executions } = this.t;
    const failed = sql<number>`count(*)`.mapWith(Number);
    return this.db
      .select({ action: executions.action, failed })
      .from(executions)
      .where(
        and(gte(executions.id, sinceId), eq(executions.environment, this.environment), eq(executions.status, "failed")),
      )
      .groupBy(executions.action)
      .orderBy(desc(failed), asc(executions.action))
      .limit(limit);
  }

  createdByBucket(range: SeriesRange): Promise<CreatedInBucket[]> {
    const { executions } = this.t;
    const bucket = bucketOf(executions.createdAt, range).mapWith(Number);
    return this.db
      .select({ bucket, status: executions.status, count: sql<number>`count(*)`.mapWith(Number) })
      .from(executions)
      .where(
        and(
          gte(executions.id, uuidV7Floor(range.since)),
          lt(executions.id, uuidV7Floor(range.until)),
          eq(executions.environment, this.environment),
          range.action === null ? undefined : eq(executions.action, range.action),
        ),
      )
      .groupBy(bucket, executions.status);
  }

  async finishedByBucket(range: SeriesRange): Promise<FinishedInBucket[]> {
    const { executions } = this.t;
    const bucket = bucketOf(executions.finishedAt, range);
    const duration = sql<number>`${executions.finishedAt} - ${executions.createdAt}`;
    const counts = {
      bucket: bucket.mapWith(Number),
      finished: sql<number>`count(*)`.mapWith(Number),
      failed: sql<number>`sum(case when ${executions.status} = 'failed' then 1 else 0 end)`.mapWith(Number),
    };
    const where = and(
      isNotNull(executions.finishedAt),
      gte(executions.finishedAt, range.since),
      lt(executions.finishedAt, range.until),
      eq(executions.environment, this.environment),
      range.action === null ? undefined : eq(executions.action, range.action),
    );
    if (this.percentiles === "percentile_disc") {
      return this.db
        .select({
          ...counts,
          p50: sql<number>`percentile_disc(0.5) within group (order by ${duration})`.mapWith(Number),
          p95: sql<number>`percentile_disc(0.95) within group (order by ${duration})`.mapWith(Number),
        })
        .from(executions)
        .where(where)
        .groupBy(bucket);
    }
    const rows = await this.db
      .select({ ...counts, sorted: sql<string>`group_concat(${duration}, ',' order by ${duration})` })
      .from(executions)
      .where(where)
      .groupBy(bucket);
    return rows.map(({ sorted, ...row }) => ({
      ...row,
      p50: nearestRank(sorted, row.finished, 50),
      p95: nearestRank(sorted, row.finished, 95),
    }));
  }

  private async countByStatus<S extends string>(
    table: SharedTables["executions"] | SharedTables["workflowRuns"],
    sinceId: string,
  ): Promise<Partial<Record<S, number>>> {
    const rows = await this.db
      .select({ status: table.status, count: sql<number>`count(*)`.mapWith(Number) })
      .from(table)
      .where(and(gte(table.id, sinceId), eq(table.environment, this.environment)))
      .groupBy(table.status);
    return Object.fromEntries(rows.map((r) => [r.status, r.count])) as Partial<Record<S, number>>;
  }
}
