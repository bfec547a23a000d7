import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { drizzle } from "drizzle-orm/bun-sqlite";
import type { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import type { DataStore } from "../data.ts";
import { readMigrations } from "../migrations.ts" with { type: "macro" };
import type { AnyDatabase, Tables } from "../sql-store.ts";
import { INTERRUPTED, SqlStore } from "../sql-store.ts";
import type { ExecutionRow, ExecutionSettlement, PrincipalKind } from "../types.ts";
import { sqliteDataStore } from "./data.ts";
import { SqliteDataWriter } from "./data-writes.ts";
import { SqliteExecutionWriter } from "./execution-writer.ts";
import { SqliteRunStore } from "./run-store.ts";
import * as schema from "./schema.ts";

const migrations = readMigrations("sqlite");
type MigrationSession = Parameters<SQLiteSyncDialect["migrate"]>[1];

/** Opens (creating when missing) a SQLite database file in WAL mode and applies pending migrations. */
export function openSqliteStore(path: string): SqlStore {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const client = new Database(path, { create: true, strict: true });
  client.exec("PRAGMA journal_mode = WAL");
  client.exec("PRAGMA synchronous = NORMAL");
  // The CLI and other processes write the same file; wait for their lock instead of failing.
  client.exec("PRAGMA busy_timeout = 5000");
  client.exec("PRAGMA foreign_keys = ON");
  // The request-id index is written at random places; keep it in memory rather than re-reading pages.
  client.exec("PRAGMA cache_size = -65536");
  const db = drizzle({ client, schema });
  // drizzle's own migrate() does exactly this after reading a folder; the migrations are inlined instead.
  const internals = db as unknown as { dialect: SQLiteSyncDialect; session: MigrationSession };
  internals.dialect.migrate(migrations, internals.session);
  return new SqliteStore(client, db as unknown as AnyDatabase);
}

/** The generic store, with the per-invocation writes and lookups on prepared statements and group commit. */
class SqliteStore extends SqlStore {
  private readonly writer: SqliteExecutionWriter;
  readonly runs: SqliteRunStore;
  readonly data: DataStore;

  constructor(client: Database, db: AnyDatabase) {
    super("sqlite", db, schema as unknown as Tables, async () => {
      this.writer.flush();
      client.close();
    });
    const data = new SqliteDataWriter(client);
    this.writer = new SqliteExecutionWriter(client, data);
    this.runs = new SqliteRunStore(client, this.writer, data);
    this.data = sqliteDataStore(client, this.instance);
  }

  override async claimExecution(row: ExecutionRow) {
    return this.writer.claim(row);
  }

  override async getExecution(id: string) {
    return this.writer.findById(id);
  }

  override settleExecution(id: string, settlement: ExecutionSettlement) {
    return this.writer.settle(id, settlement);
  }

  override async failInterrupted(at: number) {
    this.runs.releaseAllLeases();
    return this.writer.failRunning(at, INTERRUPTED);
  }

  override async findExecutionByRequest(principal: { kind: PrincipalKind; id: string }, requestId: string) {
    return this.writer.findByRequest(principal.kind, principal.id, requestId);
  }
}
