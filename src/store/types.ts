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
  /** The execution's data writes (src/data/writes.ts), committed in the same transaction as this status, or not at all. */
  writes?: WriteStatement[];
}

/** A statement of an execution's data writes; when it must change a row, the message for when it does not. */
export interface WriteStatement {
  sql: string;
  params: unknown[];
  mustChange?: string;
}

export interface ExecutionFilter {
  /** Omitted for a service key, which sees every execution. */
  principal?: { kind: PrincipalKind; id: string };
  action?: string;
  status?: ExecutionStatus;
  /** Keyset: only ids strictly below this one (ids are UUIDv7, so id order is creation order). */
  beforeId?: string;
  limit: number;
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
  listExecutions(filter: ExecutionFilter): Promise<ExecutionRow[]>;
  /**
   * Stores the final status, and the writes in the same transaction. If a write fails, nothing of them
   * is kept and the execution is stored as failed with the reason; resolves to what was stored.
   */
  settleExecution(id: string, settlement: ExecutionSettlement): Promise<ExecutionSettlement>;
  /**
   * Fails the executions a dead server process left `running`; returns how many. Only where one
   * process serves the database (SQLite) can it know that at start-up; PostgreSQL answers 0 until
   * executions carry leases.
   */
  failInterrupted(at: number): Promise<number>;

  /** Runs one read statement of the data layer (src/data/) and returns its rows. */
  dataSelect(sql: string, params: unknown[]): Promise<Record<string, unknown>[]>;
  /** Runs DDL of the data layer (the indexes a release's schema declares); idempotent statements only. */
  dataDdl(statements: string[]): Promise<void>;
  /**
   * Tells other instances sharing this database which entities a commit touched; `listen` hears theirs.
   * PostgreSQL relays over LISTEN/NOTIFY; SQLite has one process, so both do nothing there.
   */
  notifyDataChange(entities: string[]): Promise<void>;
  listenDataChanges(listener: (entities: string[]) => void): Promise<void>;
  /** Stable ids for `entity.label` keys, created on first use and kept across releases. */
  attrIds(keys: string[], now: number): Promise<Map<string, string>>;

  getFile(path: string): Promise<FileRow | null>;
  /** Inserts or replaces the metadata of `row.path` (created_at is kept on replace). */
  putFile(row: FileRow): Promise<void>;
  deleteFile(path: string): Promise<void>;
  /** The uploads of these executions. */
  uploadsOf(executionIds: string[]): Promise<FileRow[]>;

  insertToken(row: TokenRow): Promise<void>;
  findToken(tokenHash: string): Promise<TokenRow | null>;
  findTokensByPrefix(prefix: string): Promise<TokenRow[]>;
  revokeToken(id: string, at: number): Promise<void>;

  close(): Promise<void>;
}
