import { and, asc, count, eq, gt, max, sql } from "drizzle-orm";
import type { ExecutionLogStore, LogTally } from "../execution-logs.ts";
import type { LogRow } from "../rows.ts";
import { type SharedDatabase, type SharedTables, textBytes } from "./database.ts";

/** Reads lines through drizzle; `append` is each dialect's group commit (sqlite/executions.ts, pg/execution-logs.ts). */
export class DrizzleExecutionLogStore implements ExecutionLogStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Pick<SharedTables, "executionLogs">,
    readonly append: (lines: LogRow[]) => Promise<void>,
  ) {}

  async page(executionId: string, afterSeq: number, limit: number): Promise<LogRow[]> {
    const l = this.t.executionLogs;
    return this.db
      .select()
      .from(l)
      .where(and(eq(l.executionId, executionId), gt(l.seq, afterSeq)))
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
      .where(eq(l.executionId, executionId));
    return {
      lines: Number(row?.lines ?? 0),
      bytes: Number(row?.bytes ?? 0),
      nextSeq: row?.last === null || row?.last === undefined ? 0 : Number(row.last) + 1,
    };
  }
}
