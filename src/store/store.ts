import type { ControlStore } from "./control.ts";
import type { DataStore } from "./data.ts";
import type { DelayedInvocationStore } from "./delayed-invocations.ts";
import type { ExecutionLogStore } from "./execution-logs.ts";
import type { ExecutionStore } from "./executions.ts";
import type { FileStore } from "./files.ts";
import type { InstanceStore } from "./instances.ts";
import type { OAuthStore } from "./oauth.ts";
import type { ReleaseStore } from "./releases.ts";
import type { RetentionStore } from "./retention.ts";
import type { RunStore } from "./runs.ts";
import type { ScheduleStore } from "./schedules.ts";
import type { StatsStore } from "./stats.ts";
import type { TokenStore } from "./tokens.ts";
import type { UserStore } from "./users.ts";
import type { VariableStore } from "./variables.ts";

/** A batch of writes that failed as a whole and was written again one write at a time, so only a bad one fails. */
export interface BatchRetry {
  /** The writer: `runs` (workflow runs' writes), `execution_claims`, `execution_settlements`. */
  store: "runs" | "execution_claims" | "execution_settlements";
  /** `deadlock` or `serialization`: the database broke the batch off for another transaction; else `other`. */
  reason: "deadlock" | "serialization" | "other";
  writes: number;
  /** The database's error. */
  message: string;
}

/**
 * Everything the runtime persists: one store per concern, each an interface with a SQLite and a
 * PostgreSQL adapter (sqlite/, pg/), composed by that dialect's open.ts. What both dialects do the same
 * way is written once with drizzle (drizzle/).
 */
export interface Store {
  /**
   * Which environment this store reads and writes: every row it writes carries it, every read filters by
   * it (docs/decisions/hosting-layout.md). 1 for the store `openStore` answers (single mode's environment).
   * Service-wide parts (users, oauth, instances, control) and the methods by owner or instance (lease
   * renewals, releases, the interrupted-execution sweep) are the same in every view.
   */
  readonly environmentId: number;
  /**
   * The same database seen as environment `id`: cheap (no statement prepared, no connection, no thread),
   * and the same object for the same id. Closing or pinging any view does it for the whole store.
   */
  environment(id: number): Store;
  readonly executions: ExecutionStore;
  readonly executionLogs: ExecutionLogStore;
  readonly retention: RetentionStore;
  readonly runs: RunStore;
  readonly releases: ReleaseStore;
  readonly tokens: TokenStore;
  readonly users: UserStore;
  readonly oauth: OAuthStore;
  /** Organizations, environments, their keys and grants (service-wide). */
  readonly control: ControlStore;
  readonly data: DataStore;
  readonly files: FileStore;
  readonly instances: InstanceStore;
  readonly schedules: ScheduleStore;
  readonly delayedInvocations: DelayedInvocationStore;
  readonly stats: StatsStore;
  /** The environment's variables and sealed secrets. */
  readonly variables: VariableStore;

  /**
   * The connections and what waits on them (`/metrics`: actuate_db_pool_*): how many connections may be
   * open, writes queued for the next group commit, and batches waiting for their commit now.
   */
  pool(): { size: number; queued: number; inFlight: number };

  /**
   * Tells `warn` of work behind the requests that failed and will be tried again (SQLite: a merge of
   * request keys, kept in memory meanwhile): nothing is lost, but the operator should hear of it.
   */
  onTrouble(warn: (message: string) => void): void;
  /**
   * Told of every batch written again one write at a time (`/metrics`: actuate_store_batch_retries_total,
   * and a warning in the log). PostgreSQL's batches take their locks in one order, so none should be.
   */
  onBatchRetry(listener: (retry: BatchRetry) => void): void;
  /** Throws unless the database answers now (for /readyz). */
  ping(): Promise<void>;
  /** Waits for queued writes, then closes the connections. */
  close(): Promise<void>;
}
