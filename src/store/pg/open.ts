import type { PgDialect } from "drizzle-orm/pg-core";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { loadedOnFirstUse } from "../control.ts";
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
import * as schema from "../schema/pg.ts";
import type { Store } from "../store.ts";
import { BatchRetries } from "./batch-retries.ts";
import { postgresData } from "./data.ts";
import { postgresDialect } from "./dialect.ts";
import { PgLogWriter } from "./execution-logs.ts";
import { PgExecutionStore, PgExecutionWriter } from "./executions.ts";
import { PgInstanceStore } from "./instances.ts";
import { totalLoad } from "./lane.ts";
import { ListWatchers } from "./list-watchers.ts";
import { LogFollows } from "./log-follows.ts";
import { PgRuns } from "./runs.ts";
import { PgSeriesReads } from "./stats.ts";
import { pgVariableWriter } from "./variables.ts";

const migrations = readMigrations("pg");
/** Serializes migrations when several instances start at once on one database. */
const MIGRATION_LOCK = 7_351_100_001;
type MigrationSession = Parameters<PgDialect["migrate"]>[1];

export async function openPostgresStore(url: string): Promise<Store> {
  await migrateUnderLock(url);
  // Plan every execution of a named statement for its own parameters (see pg/executions.ts).
  const connection = { plan_cache_mode: "force_custom_plan" };
  // connect_timeout: during an outage a request waits for a connection at most this long, then is a 503.
  // backoff: see reconnectDelay.
  const options = { max: 10, connect_timeout: 5, backoff: reconnectDelay, onnotice: () => {}, connection };
  const client = postgres(url, options);
  const db = drizzle({ client, schema });
  const lists = { db, tables: schema };
  const instances = new PgInstanceStore(client);
  const retries = new BatchRetries();
  const follows = new LogFollows(client);
  const watchers = new ListWatchers(client);
  const executions = new PgExecutionWriter(client, instances.id, retries, follows, watchers);
  const runs = new PgRuns(client, retries, watchers);
  const logWriter = new PgLogWriter(client, follows);
  const dataOf = postgresData(client, instances.id);
  const tokensOf = drizzleTokenStores(db, schema);
  const variableWriter = pgVariableWriter(db, schema);
  const service = {
    users: new DrizzleUserStore(db, schema),
    oauth: new DrizzleOAuthStore(db, schema),
    control: loadedOnFirstUse(async () => {
      const [{ drizzleControlStore }, { postgresForkCopier }] = await Promise.all([
        import("../drizzle/control.ts"),
        import("./fork.ts"),
      ]);
      return drizzleControlStore(db, schema, postgresForkCopier(client));
    }),
    instances,
    pool: () => ({ size: options.max, ...totalLoad([executions.load, runs.load, logWriter.load]) }),
    // Every write is the database's own: nothing runs behind the requests that could fail unseen.
    onTrouble() {},
    onBatchRetry: (listener: Parameters<Store["onBatchRetry"]>[0]) => retries.listen(listener),
    async ping() {
      await client`select 1`;
    },
    async close() {
      await Promise.all([executions.drain(), runs.drain(), logWriter.drain()]);
      await watchers.close();
      await client.end({ timeout: 5 });
    },
  };
  return storeWithEnvironments(service, (environment) => {
    const inEnvironment = new PgExecutionStore(executions, environment, lists);
    return {
      executions: inEnvironment,
      executionLogs: new DrizzleExecutionLogStore(db, schema, environment, (lines) =>
        logWriter.append(environment, lines),
      ),
      runs: runs.environment(environment, inEnvironment, lists),
      retention: new DrizzleRetentionStore(db, schema, environment),
      releases: new DrizzleReleaseStore(db, schema, environment),
      tokens: tokensOf(environment),
      files: new DrizzleFileStore(db, schema, environment),
      schedules: new DrizzleScheduleStore(db, schema, environment),
      delayedInvocations: new DrizzleDelayedInvocationStore(db, postgresDialect, schema, environment),
      stats: new DrizzleStatsStore(db, schema, environment, new PgSeriesReads(db, schema, environment)),
      data: dataOf.environment(environment),
      variables: new DrizzleVariableStore(db, schema, environment, variableWriter),
    };
  });
}

/**
 * Seconds a pool connection waits before reconnecting after its last attempt failed. postgres-js counts
 * failures for the whole pool and waits up to 3^n / 100 s, capped at 20 s: every request during an outage
 * adds failures, so the first requests after the database came back waited 12–17 s for a connection
 * (issue #13). Same curve, capped at one second.
 */
export const reconnectDelay = (failures: number) => (0.5 + Math.random() / 2) * Math.min(3 ** failures / 100, 1);

async function migrateUnderLock(url: string): Promise<void> {
  const session = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await session`select pg_advisory_lock(${MIGRATION_LOCK})`;
    // drizzle's own migrate() does exactly this after reading a folder; the migrations are inlined instead.
    const db = drizzle({ client: session }) as unknown as { dialect: PgDialect; session: MigrationSession };
    await db.dialect.migrate(migrations, db.session, { migrationsFolder: "drizzle/pg" });
  } finally {
    await session.end({ timeout: 5 });
  }
}
