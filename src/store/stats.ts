import type { ExecutionStatus, RunStatus } from "./statuses.ts";

/** Buckets of `stepMs` from `since` (a multiple of the step) to `until` (exclusive), and an optional action. */
export interface SeriesRange {
  since: number;
  until: number;
  stepMs: number;
  action: string | null;
}

/** Executions created in one bucket (`bucket`: its index from `since`) with one status. */
export interface CreatedInBucket {
  bucket: number;
  status: ExecutionStatus;
  count: number;
}

/**
 * Executions that finished in one bucket: how many, how many failed, and the nearest-rank p50 and p95 of
 * their durations (`finished_at - created_at`, what the caller waited).
 */
export interface FinishedInBucket {
  bucket: number;
  finished: number;
  failed: number;
  p50: number;
  p95: number;
}

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
  /**
   * Executions created in each bucket of the range, by status (GET /stats/series): one range of the primary
   * key, as `executionsByStatus`; buckets and statuses with none left out.
   */
  createdByBucket(range: SeriesRange): Promise<CreatedInBucket[]>;
  /** Executions finished in each bucket of the range (a range of the finished_at index); buckets with none left out. */
  finishedByBucket(range: SeriesRange): Promise<FinishedInBucket[]>;
}

/** The series' two reads, which each database does its own way (pg/stats.ts, sqlite/stats.ts). */
export type SeriesReads = Pick<StatsStore, "createdByBucket" | "finishedByBucket">;
