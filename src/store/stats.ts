import type { ExecutionStatus, RunStatus } from "./statuses.ts";

/**
 * Counts for an overview of the store's environment (GET /stats), of its rows only. Each reads one range of a primary key: ids
 * are UUIDv7, so "created since" is "id at least" the lowest id of that millisecond.
 */
export interface StatsStore {
  /** Executions created at or after the time `sinceId` encodes, by status (statuses with none left out). */
  executionsByStatus(sinceId: string): Promise<Partial<Record<ExecutionStatus, number>>>;
  /** Workflow runs created at or after the time `sinceId` encodes, by status. */
  runsByStatus(sinceId: string): Promise<Partial<Record<RunStatus, number>>>;
  /**
   * The `limit` actions with the most executions created since `sinceId` that failed, most first (ties by
   * name); actions with none left out.
   */
  failingActions(sinceId: string, limit: number): Promise<{ action: string; failed: number }[]>;
}
