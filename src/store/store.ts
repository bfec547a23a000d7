import type { ExecutionStore } from "./executions.ts";
import type { FileStore } from "./files.ts";
import type { InstanceStore } from "./instances.ts";
import type { OAuthStore } from "./oauth.ts";
import type { ReleaseStore } from "./releases.ts";
import type { RunStore } from "./runs.ts";
import type { TokenStore } from "./tokens.ts";
import type { UserStore } from "./users.ts";

/**
 * Everything the runtime persists: one store per concern, each an interface with a SQLite and a
 * PostgreSQL adapter (sqlite/, pg/), composed by that dialect's open.ts. What both dialects do the same
 * way is written once with drizzle (drizzle/).
 */
export interface Store {
  readonly dialect: "sqlite" | "postgres";
  readonly executions: ExecutionStore;
  readonly runs: RunStore;
  readonly releases: ReleaseStore;
  readonly tokens: TokenStore;
  readonly users: UserStore;
  readonly oauth: OAuthStore;
  readonly files: FileStore;
  readonly instances: InstanceStore;

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

  /** Throws unless the database answers now (for /readyz). */
  ping(): Promise<void>;
  /** Waits for queued writes, then closes the connections. */
  close(): Promise<void>;
}
