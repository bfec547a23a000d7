import type { LogRow } from "./rows.ts";

/** How much of its log an execution holds: the engine bounds each execution's lines with it. */
export interface LogTally {
  lines: number;
  bytes: number;
  /** The seq the next line takes (a workflow run's next pass goes on numbering from here). */
  nextSeq: number;
}

/**
 * The lines one environment's executions logged (another's read as none), the same on every dialect (test/store/execution-log-store.contract.ts).
 * Lines are numbered by the engine (seq), so they read back in the order written whichever commit
 * stored them. A line written twice (same execution and seq) is stored once.
 */
export interface ExecutionLogStore {
  /**
   * Stores lines with the next group commit of the execution writes (SQLite: the same transaction;
   * PostgreSQL: one statement for every line queued in the turn); resolves once committed. The lines
   * an execution logs before it ends travel with its settlement instead (ExecutionSettlement.logs).
   */
  append(lines: LogRow[]): Promise<void>;
  /** One execution's lines with seq above `afterSeq` (-1: from the first), in order, at most `limit`. */
  page(executionId: string, afterSeq: number, limit: number): Promise<LogRow[]>;
  tally(executionId: string): Promise<LogTally>;
}
