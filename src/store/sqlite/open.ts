import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { type BunSQLiteDatabase, drizzle } from "drizzle-orm/bun-sqlite";
import type { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import { loadedOnFirstUse } from "../control.ts";
import type { SharedDatabase, SharedTables } from "../drizzle/database.ts";
import { DrizzleDelayedInvocationStore } from "../drizzle/delayed-invocations.ts";
import { DrizzleExecutionLogStore } from "../drizzle/execution-logs.ts";
import { DrizzleFileStore } from "../drizzle/files.ts";
import { DrizzleOAuthStore } from "../drizzle/oauth.ts";
import { DrizzleReleaseStore } from "../drizzle/releases.ts";
import { DrizzleRetentionStore } from "../drizzle/retention.ts";
import { DrizzleScheduleStore } from "../drizzle/schedules.ts";
import { DrizzleStatsStore } from "../drizzle/stats.ts";
import { drizzleTokenStores } from "../drizzle/tokens.ts";
import { DrizzleUserStore } from "../drizzle/users.ts";
import { DrizzleVariableStore } from "../drizzle/variables.ts";
import { storeWithEnvironments } from "../environment-views.ts";
import { readMigrations } from "../migrations.ts" with { type: "macro" };
import * as schema from "../schema/sqlite.ts";
import type { Store } from "../store.ts";
import { BackgroundCheckpoints } from "./checkpoints/index.ts";
import { sqliteData } from "./data.ts";
import { SqliteDataWriter } from "./data-writes.ts";
import { sqliteDialect } from "./dialect.ts";
import { SqliteExecutionStore, SqliteExecutionWriter } from "./executions.ts";
import { SqliteInstanceStore } from "./instances.ts";
import { requestKeysPath } from "./request-keys/file.ts";
import { SqliteRuns } from "./runs.ts";
import { SqliteSeriesReads } from "./stats.ts";
import { sqliteVariableWriter } from "./variables.ts";

const migrations = readMigrations("sqlite");
type MigrationSession = Parameters<SQLiteSyncDialect["migrate"]>[1];

/** Opens (creating when missing) a SQLite database file in WAL mode and applies pending migrations. */
export function openSqliteStore(path: string, options: { synchronous?: "normal" | "full" } = {}): Store {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const client = new Database(path, { create: true, strict: true });
  client.exec("PRAGMA journal_mode = WAL");
  // NORMAL: a crash of the process loses nothing answered, a power loss the last checkpoint's worth;
  // FULL: an fsync per (group) commit (docs/decisions/sqlite.md, "What synchronous=NORMAL guarantees").
  client.exec(`PRAGMA synchronous = ${options.synchronous === "full" ? "FULL" : "NORMAL"}`);
  // The CLI and other processes write the same file; wait for their lock instead of failing.
  client.exec("PRAGMA busy_timeout = 5000");
  client.exec("PRAGMA foreign_keys = ON");
  // Most of what a SQLite server's memory grows by as its data grows (docs/decisions/sqlite.md).
  client.exec("PRAGMA cache_size = -65536");
  const sqlite: BunSQLiteDatabase<typeof schema> = drizzle({ client, schema });
  // drizzle's own migrate() does exactly this after reading a folder; the migrations are inlined instead.
  const internals = sqlite as unknown as { dialect: SQLiteSyncDialect; session: MigrationSession };
  internals.dialect.migrate(migrations, internals.session);

  // drizzle/ is compiled against sqlite-core's builders by its own check (drizzle/database.ts).
  const db = sqlite as unknown as SharedDatabase;
  const tables = schema as unknown as SharedTables;
  const lists = { db, tables };
  const data = new SqliteDataWriter(client);
  const checkpoints = path === ":memory:" ? null : new BackgroundCheckpoints(client, path);
  const executions = new SqliteExecutionWriter(client, data, requestKeysPath(path), checkpoints);
  const runs = new SqliteRuns(client, executions, data, checkpoints);
  const instances = new SqliteInstanceStore(executions, runs);
  const dataOf = sqliteData(client, instances.id);
  const tokensOf = drizzleTokenStores(db, tables);
  const variableWriter = sqliteVariableWriter(sqlite, schema);
  const service = {
    users: new DrizzleUserStore(db, tables),
    oauth: new DrizzleOAuthStore(db, tables),
    control: loadedOnFirstUse(async () => {
      const [{ drizzleControlStore }, { sqliteForkCopier }] = await Promise.all([
        import("../drizzle/control.ts"),
        import("./fork.ts"),
      ]);
      return drizzleControlStore(db, tables, sqliteForkCopier(client, path));
    }),
    instances,
    // One connection, written synchronously: what waits is the next group commit.
    pool: () => ({ size: 1, queued: executions.queued, inFlight: 0 }),
    onTrouble: (warn: (message: string) => void) => executions.onTrouble(warn),
    // One connection writes, so no batch waits on another's locks: none is broken off.
    onBatchRetry() {},
    async ping() {
      client.query("select 1").get();
    },
    async close() {
      await executions.close();
      client.close();
    },
  };
  return storeWithEnvironments(service, (environment) => ({
    executions: new SqliteExecutionStore(executions, environment, lists),
    executionLogs: new DrizzleExecutionLogStore(db, tables, environment, (lines) =>
      executions.appendLogs(environment, lines),
    ),
    runs: runs.environment(environment, lists),
    retention: new DrizzleRetentionStore(db, tables, environment, (keys) => executions.forgetRequests(keys)),
    releases: new DrizzleReleaseStore(db, tables, environment),
    tokens: tokensOf(environment),
    files: new DrizzleFileStore(db, tables, environment),
    schedules: new DrizzleScheduleStore(db, tables, environment),
    delayedInvocations: new DrizzleDelayedInvocationStore(db, sqliteDialect, tables, environment),
    stats: new DrizzleStatsStore(db, tables, environment, new SqliteSeriesReads(client, environment)),
    data: dataOf.environment(environment),
    variables: new DrizzleVariableStore(db, tables, environment, variableWriter),
  }));
}
