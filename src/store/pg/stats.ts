import { type AnyColumn, and, eq, gte, isNotNull, lt, type SQL, sql } from "drizzle-orm";
import type { PgDatabase } from "drizzle-orm/pg-core";
import { uuidV7Floor } from "../../lib/ids.ts";
import type * as schema from "../schema/pg.ts";
import type { CreatedInBucket, FinishedInBucket, SeriesRange, SeriesReads } from "../stats.ts";

/**
 * A whole number written into the statement: the bucket's expression must be the same text in the select
 * list and the GROUP BY (PostgreSQL takes `$1` and `$3` for two expressions).
 */
function integer(value: number): SQL {
  if (!Number.isSafeInteger(value)) throw new Error(`not a whole number: ${value}`);
  return sql.raw(String(value));
}

/** The index of the bucket `column`'s time falls in (bigint division truncates). */
const bucketOf = (column: AnyColumn, range: SeriesRange) =>
  sql<number>`cast((${column} - ${integer(range.since)}) / ${integer(range.stepMs)} as integer)`;

/**
 * The series on PostgreSQL: one GROUP BY a read, hashed; percentiles by `percentile_disc` (nearest rank),
 * both ranks from one sort of each bucket's durations.
 */
export class PgSeriesReads implements SeriesReads {
  constructor(
    // biome-ignore lint/suspicious/noExplicitAny: the driver's result type is not read here.
    private readonly db: PgDatabase<any, typeof schema>,
    private readonly t: Pick<typeof schema, "executions">,
    private readonly environment: number,
  ) {}

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

  finishedByBucket(range: SeriesRange): Promise<FinishedInBucket[]> {
    const { executions } = this.t;
    const bucket = bucketOf(executions.finishedAt, range).mapWith(Number);
    const duration = sql<number>`${executions.finishedAt} - ${executions.createdAt}`;
    return this.db
      .select({
        bucket,
        finished: sql<number>`count(*)`.mapWith(Number),
        failed: sql<number>`count(*) filter (where ${executions.status} = 'failed')`.mapWith(Number),
        p50: sql<number>`percentile_disc(0.5) within group (order by ${duration})`.mapWith(Number),
        p95: sql<number>`percentile_disc(0.95) within group (order by ${duration})`.mapWith(Number),
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
      .groupBy(bucket);
  }
}
