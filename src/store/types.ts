import type { DataStore, DataWrite } from "./data.ts";

/** Row shapes shared by both dialects (see sqlite/schema.ts and pg/schema.ts). Timestamps are epoch milliseconds. */

export type ExecutionStatus = "queued" | "running" | "succeeded" | "failed" | "canceled";
export const EXECUTION_STATUSES: readonly ExecutionStatus[] = ["queued", "running", "succeeded", "failed", "canceled"];
export const isTerminal = (status: string) => status === "succeeded" || status === "failed" || status === "canceled";

export type ActionKind = "function" | "workflow";
export type PrincipalKind = "user" | "service";

export interface ExecutionRow {
  id: string;
  requestId: string;
  principalKind: PrincipalKind;
  principalId: string;
  action: string;
  kind: ActionKind;
  releaseVersion: string;
  contractHash: string;
  inputFingerprint: string;
  input: unknown;
  status: ExecutionStatus;
  output: unknown;
  errorCode: string | null;
  errorMessage: string | null;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

export interface ExecutionSettlement {
  status: "succeeded" | "failed" | "canceled";
  output: unknown;
  errorCode: string | null;
  errorMessage: string | null;
  finishedAt: number;
  /** The execution's data writes, committed in the same transaction as this status, or not at all. */
  writes?: DataWrite[];
}

export interface ExecutionFilter {
  /** Omitted for a service key, which sees every execution. */
  principal?: { kind: PrincipalKind; id: string };
  action?: string;
  status?: ExecutionStatus;
  /** Keyset: only ids strictly below this one (ids are UUIDv7, so id order is creation order). */
  beforeId?: string;
  limit: number;
  /** Inputs, outputs and error messages larger than this (as stored) are left in the database: `null` in the row. */
  maxValueBytes: number;
}

/** An execution as lists read it: large values stay in the database, their sizes say what was left out. */
export interface ExecutionListRow extends ExecutionRow {
  inputBytes: number;
  /** 0 when there is no output. */
  outputBytes: number;
  /** 0 when there is no error message. */
  errorMessageBytes: number;
}

export interface ReleaseRow {
  version: string;
  bundleHash: string;
  manifest: unknown;
  bundle: string;
  createdAt: number;
}

export type ReleaseSummary = Omit<ReleaseRow, "bundle">;

export interface ActiveRelease {
  version: string | null;
  revision: number;
  /** When the active version was last activated (ms), null when none ever was. */
  activatedAt: number | null;
}

export interface FileRow {
  path: string;
  contentType: string;
  size: number | null;
  sha256: string | null;
  ownerKind: PrincipalKind;
  ownerId: string;
  createdAt: number;
  updatedAt: number;
  /** Set when the file was sent as an input of this execution (one of its uploads). */
  executionId?: string | null;
  field?: string | null;
  filename?: string | null;
}

export type RunStatus = "queued" | "running" | "sleeping" | "succeeded" | "failed" | "canceled";
export const isRunTerminal = (status: RunStatus) =>
  status === "succeeded" || status === "failed" || status === "canceled";

/** A workflow run. Its id is the id of the execution that admitted it. */
export interface RunRow {
  id: string;
  requestId: string;
  workflow: string;
  releaseVersion: string;
  principalKind: PrincipalKind;
  principalId: string;
  input: unknown;
  status: RunStatus;
  output: unknown;
  errorCode: string | null;
  errorMessage: string | null;
  cancelRequested: boolean;
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  /** When a waiting run (queued, sleeping, backing off) may be claimed. */
  wakeAt: number;
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
}

export const RUN_STATUSES: readonly RunStatus[] = ["queued", "running", "sleeping", "succeeded", "failed", "canceled"];

export interface RunFilter {
  /** Omitted for a service key, which sees every run. */
  principal?: { kind: PrincipalKind; id: string };
  workflow?: string;
  status?: RunStatus;
  /** Keyset: only ids strictly below this one (run ids are UUIDv7: id order is creation order). */
  beforeId?: string;
  limit: number;
  /** Inputs, outputs and error messages larger than this (as stored) are left in the database: `null` in the row. */
  maxValueBytes: number;
}

/** A run as lists read it: large values stay in the database, their sizes say what was left out. */
export interface RunListRow extends RunRow {
  inputBytes: number;
  /** 0 when absent, as for the error message. */
  outputBytes: number;
  errorMessageBytes: number;
}

/**
 * `retrying`: an attempt failed and another is due; `sleeping`: a durable timer that has not fired;
 * `canceled`: the run was canceled while the step ran or waited.
 */
export type StepStatus = "running" | "retrying" | "sleeping" | "succeeded" | "failed" | "canceled";

export interface StepRow {
  runId: string;
  name: string;
  /** The order in which the run first reached it. */
  seq: number;
  kind: "step" | "sleep";
  status: StepStatus;
  attempts: number;
  output: unknown;
  error: string | null;
  startedAt: number | null;
  finishedAt: number | null;
}

/** How a run ended, for the run and the execution that follows it. */
export interface RunSettlement {
  status: "succeeded" | "failed" | "canceled";
  output: unknown;
  errorCode: string | null;
  errorMessage: string | null;
  finishedAt: number;
}

export const runCanceled = (at: number): RunSettlement => ({
  status: "canceled",
  output: null,
  errorCode: "run_canceled",
  errorMessage: "the run was canceled",
  finishedAt: at,
});

/** What a write fenced by a run's lease did: stored, or nothing at all because `owner` no longer holds the run. */
export type Fenced = { saved: true } | { leaseLost: true };

/** A step's checkpoint may also be refused: its data writes broke a rule of the data (a unique value taken, a row gone). */
export type StepSaved = Fenced | { refused: string };

/** A run given up until `wakeAt` (a sleep, a retry's backoff), with the step row that says why. */
export interface Suspension {
  status: "running" | "sleeping";
  wakeAt: number;
  step: StepRow;
  now: number;
}

export const SAVED = { saved: true } as const;
export const LEASE_LOST = { leaseLost: true } as const;

/**
 * Workflow runs and their checkpoints, the same on every dialect (test/store/run-store.contract.ts).
 *
 * A run is held by the owner its last claim (or admission) named, until the run ends, is suspended or
 * released, or another owner claims it once its lease has expired. Every write a worker makes about a
 * run is fenced by that: once another owner has taken the run over, the old one's writes change nothing
 * and answer `{ leaseLost }`. Fencing is by owner, not by the clock: a lease that ran out while no one
 * claimed the run is still its owner's. Times are the caller's (`now`, `leaseUntil`, a settlement's
 * `finishedAt`); the store never reads a clock.
 */
export interface RunStore {
  /**
   * Inserts the execution and its run in one transaction unless (principal, requestId) is taken; then
   * answers the execution holding the key (its run, if it is a workflow's, has the same id).
   */
  admit(execution: ExecutionRow, run: RunRow): Promise<{ execution: ExecutionRow; created: boolean }>;
  get(id: string): Promise<RunRow | null>;
  /** Runs newest first. */
  list(filter: RunFilter): Promise<RunListRow[]>;
  steps(runId: string): Promise<StepRow[]>;
  /**
   * Leases up to `limit` runs that are due (or asked to cancel) and whose lease, if any, expired before
   * `now`; the runs become `running` (their executions too, when queued). Concurrent claims never hand
   * one run to two owners.
   */
  claim(owner: string, now: number, leaseUntil: number, limit: number): Promise<RunRow[]>;
  /** Extends the leases `owner` still holds among `ids`; answers those, with whether a cancel was asked. */
  renew(owner: string, ids: string[], leaseUntil: number): Promise<{ id: string; cancelRequested: boolean }[]>;
  /**
   * Stores a step's row; its data writes (a succeeded step's) commit with it or not at all, and a write
   * the data refuses answers `{ refused }` with nothing stored. An attempt's start (`running`) never
   * replaces the row of the same or a later attempt, whatever order writes land in.
   */
  saveStep(owner: string, step: StepRow, writes?: DataWrite[]): Promise<StepSaved>;
  /**
   * Gives the run up until `wakeAt` (a sleep, a retry's backoff) with the step row that says why, in one
   * transaction: the step row, the run's status and wake time, and the lease let go, or none of them.
   */
  suspend(owner: string, runId: string, suspension: Suspension): Promise<Fenced>;
  /** Ends the run and its execution in one transaction (a canceled run's open steps end canceled with it). */
  finish(owner: string, runId: string, settlement: RunSettlement): Promise<Fenced>;
  /**
   * Asks a run to stop. One that no live lease holds at `now` ends `canceled` at once (with its
   * execution); a held one is flagged for its worker. Answers the run as it is afterwards, or null when
   * there is none.
   */
  requestCancel(runId: string, now: number): Promise<RunRow | null>;
  /** Lets go of every run `owner` holds (on shutdown), so another worker can resume them at once. */
  release(owner: string): Promise<void>;
}

export interface TokenRow {
  id: string;
  tokenHash: string;
  prefix: string;
  userId: string;
  createdAt: number;
  revokedAt: number | null;
}

/** Everything the runtime persists, behind one interface with a SQLite and a PostgreSQL implementation. */
export interface Store {
  readonly dialect: "sqlite" | "postgres";
  readonly runs: RunStore;
  readonly data: DataStore;

  insertRelease(row: ReleaseRow): Promise<void>;
  getRelease(version: string): Promise<ReleaseRow | null>;
  listReleases(): Promise<ReleaseSummary[]>;
  getActive(): Promise<ActiveRelease>;
  /** Makes `version` live; returns the new revision. */
  activate(version: string, at: number): Promise<number>;

  /** Inserts the execution unless (principal, requestId) exists; either way returns the row that holds the key. */
  claimExecution(row: ExecutionRow): Promise<{ row: ExecutionRow; created: boolean }>;
  getExecution(id: string): Promise<ExecutionRow | null>;
  findExecutionByRequest(
    principal: { kind: PrincipalKind; id: string },
    requestId: string,
  ): Promise<ExecutionRow | null>;
  listExecutions(filter: ExecutionFilter): Promise<ExecutionListRow[]>;
  /**
   * Stores the final status, and the writes in the same transaction. If a write fails, nothing of them
   * is kept and the execution is stored as failed with the reason; resolves to what was stored.
   */
  settleExecution(id: string, settlement: ExecutionSettlement): Promise<ExecutionSettlement>;
  /**
   * Hears the ids of executions whose status another writer sharing the database changed (this
   * process's own changes too), so followers need not wait for their next poll. PostgreSQL: LISTEN on
   * what a trigger on `executions` notifies; SQLite has one process, so this does nothing there.
   */
  listenExecutionChanges(listener: (ids: string[]) => void): Promise<void>;
  /**
   * Fails the function executions a dead server process left `running`, and frees the runs it held;
   * returns how many executions failed. Only where one process serves the database (SQLite) can it know
   * that at start-up; on PostgreSQL run leases expire by themselves and this answers 0.
   */
  failInterrupted(at: number): Promise<number>;
  /** This server process, as other instances sharing the database know it. */
  readonly instance: string;
  /**
   * Says this process is alive until `expiresAt`, and fails the function executions that instances no
   * longer alive left `running` (`execution_interrupted`); returns how many. PostgreSQL only: a SQLite
   * database has one process, which does this once at start-up (`failInterrupted`).
   */
  keepAlive(now: number, expiresAt: number): Promise<number>;
  /** Says this process is gone (on shutdown): whatever it still runs is interrupted for the others. */
  retire(): Promise<void>;

  /** Throws unless the database answers now (for /readyz). */
  ping(): Promise<void>;

  getFile(path: string): Promise<FileRow | null>;
  /** Inserts or replaces the metadata of `row.path` (created_at is kept on replace). */
  putFile(row: FileRow): Promise<void>;
  deleteFile(path: string): Promise<void>;
  /** The uploads of these executions. */
  uploadsOf(executionIds: string[]): Promise<FileRow[]>;

  insertToken(row: TokenRow): Promise<void>;
  findToken(tokenHash: string): Promise<TokenRow | null>;
  findTokensByPrefix(prefix: string): Promise<TokenRow[]>;
  /** Every user token, oldest first, without its hash. */
  listTokens(): Promise<Omit<TokenRow, "tokenHash">[]>;
  revokeToken(id: string, at: number): Promise<void>;

  close(): Promise<void>;
}
