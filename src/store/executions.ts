import type { DataWrite } from "./data.ts";
import type { ExecutionRow, LogRow } from "./rows.ts";
import type { ExecutionStatus, PrincipalKind } from "./statuses.ts";

export interface ExecutionSettlement {
  status: "succeeded" | "failed" | "canceled";
  output: unknown;
  errorCode: string | null;
  errorMessage: string | null;
  finishedAt: number;
  /** The execution's data writes, committed in the same transaction as this status, or not at all. */
  writes?: DataWrite[];
  /** The execution's log lines not yet stored, committed with this status (never answered back). */
  logs?: LogRow[];
}

export interface ExecutionFilter {
  /** Omitted for a service key, which sees every execution of the store's environment. */
  principal?: { kind: PrincipalKind; id: string };
  action?: string;
  status?: ExecutionStatus;
  /** Keyset: only ids strictly below this one (ids are UUIDv7, so id order is creation order). */
  beforeId?: string;
  /** Only ids at or above this one: with a UUIDv7 floor, the executions created since its time. */
  sinceId?: string;
  limit: number;
  /** Values larger than this (as stored) are left in the database: `null` in the row (see LISTED_VALUES). */
  maxValueBytes: number;
}

/**
 * The order a list reads a row's values in (executions and runs alike). It stops at the first larger than
 * `maxValueBytes`: that value and those after it stay in the database, `null` in the row. SQLite stores
 * them last in this order and reaches a value only by reading through those stored before it (a row holds
 * an output or an error message, never both, so in practice a large one leaves the input out too).
 */
export const LISTED_VALUES = ["errorMessage", "output", "input"] as const;

/** A row as lists read it: large values stay in the database, their sizes say what was left out. */
export type Listed<Row> = Row & {
  inputBytes: number;
  /** 0 when there is no output. */
  outputBytes: number;
  /** 0 when there is no error message. */
  errorMessageBytes: number;
};

export type ExecutionListRow = Listed<ExecutionRow>;

/** The error message of an execution whose server process stopped while it ran. */
export const INTERRUPTED = "the server stopped while this execution ran; it did not finish";

/**
 * One environment's executions, the same on every dialect (test/store/execution-store.contract.ts). A
 * (principal, requestId) pair names one execution of the environment for ever: claiming it again answers
 * the execution that holds it; in another environment it is another key. Another environment's execution
 * ids are unknown here (null, or "not stored" for a settlement).
 */
export interface ExecutionStore {
  /** Inserts the execution unless (principal, requestId) exists; either way answers the row that holds the key. */
  claim(row: ExecutionRow): Promise<{ row: ExecutionRow; created: boolean }>;
  /**
   * The claim of an execution about to run here, answered once decided, before its commit, so that a
   * handler ending in the same turn commits with it (PostgreSQL: in the claim's transaction; SQLite: in
   * the next group commit). `committed` resolves once the row is durable: nothing about it may be
   * answered before (a settlement's own promise resolves after it too).
   */
  claimToRun(row: ExecutionRow): Promise<{ row: ExecutionRow; created: boolean; committed: Promise<void> }>;
  get(id: string): Promise<ExecutionRow | null>;
  /** Those of these ids that are this environment's executions, in no particular order. */
  getMany(ids: string[]): Promise<ExecutionRow[]>;
  findByRequest(principal: { kind: PrincipalKind; id: string }, requestId: string): Promise<ExecutionRow | null>;
  /** Newest first. */
  list(filter: ExecutionFilter): Promise<ExecutionListRow[]>;
  /**
   * Stores the final status, and the writes in the same transaction. If a write fails, nothing of them
   * is kept and the execution is stored as failed with the reason; resolves to what was stored.
   */
  settle(id: string, settlement: ExecutionSettlement): Promise<ExecutionSettlement>;
  /**
   * Hears what writers sharing the database changed (this process's own changes too), of every
   * environment (ids are unique across them), so followers need not wait for their next poll.
   * PostgreSQL: LISTEN on what a trigger on `executions` and the log lines' append statement notify;
   * SQLite has one process, so this does nothing there.
   */
  listen(changes: ExecutionChanges): Promise<void>;
  /**
   * Tells the writers sharing the database that a follower here starts (or stops) following this
   * execution's log lines, so that whichever runs it sends word of each batch it stores (PostgreSQL:
   * NOTIFY, only for followed executions). SQLite has one process: nothing to tell.
   */
  followLogs(id: string, following: boolean): Promise<void>;
  /**
   * Tells the writers sharing the database that a live list here starts (or stops) being watched, so that
   * they send word of the executions they make (PostgreSQL: NOTIFY, only while another process watches
   * one). SQLite has one process: nothing to tell.
   */
  watchLists(watching: boolean): void;
}

/** An execution whose log lines are stored up to `seq` (those of other instances included). */
export interface LoggedUpTo {
  executionId: string;
  seq: number;
}

/** What `ExecutionStore.listen` tells. */
export interface ExecutionChanges {
  /** These executions' stored rows changed (a status). */
  stored(ids: string[]): void;
  /** These followed executions' log lines were stored (by the append path; those stored with a status come with `stored`). */
  logged(lines: LoggedUpTo[]): void;
  /** Another process made these executions (it says so while a list here is watched: `watchLists`). */
  madeElsewhere(ids: string[]): void;
}
