import { and, asc, count, eq, getTableColumns, gt, max, sql } from "drizzle-orm";
import type { ExecutionLogStore, LogTally } from "../execution-logs.ts";
import type { LogRow } from "../rows.ts";
import { type SharedDatabase, type SharedTables, textBytes } from "./database.ts";

/**
 * One environment's lines, read through drizzle; `append` is each dialect's group commit
 * (sqlite/executions.ts, pg/execution-logs.ts), handed the environment by the caller that binds it.
 */
export class DrizzleExecutionLogStore implements ExecutionLogStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Pick<SharedTables, "executionLogs">,
    private readonly environment: number,
    readonly append: (lines: LogRow[]) => Promise<void>,
  ) {}

  async page(executionId: string, afterSeq: number, limit: number): Promise<LogRow[]> {
    const l = this.t.executionLogs;
    const { environment: _, ...columns } = getTableColumns(l);
    return this.db
      .select(columns)
      .from(l)
      .where(and(eq(l.executionId, executionId), eq(l.environment, this.environment), gt(l.seq, afterSeq)))
      .orderBy(asc(l.seq))
      .limit(limit);
  }

  async tally(executionId: string): Promise<LogTally> {
    const l = this.t.executionLogs;
    const [row] = await this.db
      .select({
        lines: count(),
        bytes: sql<number>`coalesce(sum(${textBytes(l.line)}), 0)`,
        last: max(l.seq),
      })
      .from(l)
      .where(and(eq(l.executionId, executionId), eq(l.environment, this.environment)));
    return {
      lines: Number(row?.lines ?? 0),
      bytes: Number(row?.bytes ?? 0),
      nextSeq: row?.last === null || row?.last === undefined ? 0 : Number(row.last) + 1,
    };
  }
}
