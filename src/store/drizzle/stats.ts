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

/** One environment's counts: each the environment's rows in the id range (ids are unique across environments). */
export class DrizzleStatsStore implements StatsStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Pick<SharedTables, "executions" | "workflowRuns">,
    private readonly environment: number,
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

  /**
   * Percentiles by rank within each bucket (window functions, the same statement on both databases):
   * SQLite has no percentile aggregate, and the one sort gives the count and both ranks at once.
   */
  async finishedByBucket(range: SeriesRange): Promise<FinishedInBucket[]> {
    const { executions } = this.t;
    const bucket = bucketOf(executions.finishedAt, range);
    const duration = sql`${executions.finishedAt} - ${executions.createdAt}`;
    const ranked = this.db
      .select({
        bucket: bucket.as("bucket"),
        failed: sql<number>`case when ${executions.status} = 'failed' then 1 else 0 end`.as("failed"),
        ms: duration.as("ms"),
        rank: sql<number>`row_number() over (partition by ${bucket} order by ${duration})`.as("rank"),
        n: sql<number>`count(*) over (partition by ${bucket})`.as("n"),
      })
      .from(executions)
      .where(
        and(
          isNotNull(executions.finishedAt),
          gte(executions.finishedAt, range.since),
          lt(executions.finishedAt, range.until),
          eq(executions.environment, this.environment),
          range.action === null ? undefined : eq(executions.action, range.action),
        ),
      )
      .as("ranked");
    // Nearest rank: the ceil(p·n)-th duration, in integers: (n + 1) / 2 and (95·n + 99) / 100.
    return this.db
      .select({
        bucket: sql<number>`${ranked.bucket}`.mapWith(Number),
        finished: sql<number>`max(${ranked.n})`.mapWith(Number),
        failed: sql<number>`sum(${ranked.failed})`.mapWith(Number),
        p50: sql<number>`max(case when ${ranked.rank} = (${ranked.n} + 1) / 2 then ${ranked.ms} end)`.mapWith(Number),
        p95: sql<number>`max(case when ${ranked.rank} = (95 * ${ranked.n} + 99) / 100 then ${ranked.ms} end)`.mapWith(
          Number,
        ),
      })
      .from(ranked)
      .groupBy(sql`${ranked.bucket}`);
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
