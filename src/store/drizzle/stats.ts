import { and, asc, desc, eq, gte, sql } from "drizzle-orm";
import type { CreatedInBucket, FinishedInBucket, SeriesRange, SeriesReads, StatsStore } from "../stats.ts";
import type { ExecutionStatus, RunStatus } from "../statuses.ts";
import type { SharedDatabase, SharedTables } from "./database.ts";

/** One environment's counts: each the environment's rows in the id range (ids are unique across environments). */
export class DrizzleStatsStore implements StatsStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Pick<SharedTables, "executions" | "workflowRuns">,
    private readonly environment: number,
    private readonly series: SeriesReads,
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
    return this.series.createdByBucket(range);
  }

  finishedByBucket(range: SeriesRange): Promise<FinishedInBucket[]> {
    return this.series.finishedByBucket(range);
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
