import type { PgDialect } from "drizzle-orm/pg-core";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres, { type Sql } from "postgres";
import type { DataStore } from "../data.ts";
import { readMigrations } from "../migrations.ts" with { type: "macro" };
import { INTERRUPTED, SqlStore } from "../sql-store.ts";
import type { ExecutionRow, ExecutionSettlement } from "../types.ts";
import { postgresDataStore } from "./data.ts";
import { PgExecutionWriter } from "./execution-writer.ts";
import { PgRunStore } from "./run-store.ts";
import * as schema from "./schema.ts";

const migrations = readMigrations("pg");
/** Serializes migrations when several instances start at once on one database. */
const MIGRATION_LOCK = 7_351_100_001;
type MigrationSession = Parameters<PgDialect["migrate"]>[1];

export async function openPostgresStore(url: string): Promise<SqlStore> {
  await migrateUnderLock(url);
  // Plan every execution of a named statement for its own parameters (see pg/execution-writer.ts).
  const connection = { plan_cache_mode: "force_custom_plan" };
  // connect_timeout: during an outage a request waits for a connection at most this long, then is a 503.
  return new PostgresStore(postgres(url, { max: 10, connect_timeout: 5, onnotice: () => {}, connection }));
}

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

/** The generic store, with the per-invocation writes batched into one statement per event-loop turn. */
class PostgresStore extends SqlStore {
  private readonly writer: PgExecutionWriter;
  readonly runs: PgRunStore;
  readonly data: DataStore;

  constructor(private readonly client: Sql) {
    super("postgres", drizzle({ client, schema }), schema, async () => {
      await Promise.all([this.writer.drain(), this.runs.drain()]);
      await client.end({ timeout: 5 });
    });
    this.writer = new PgExecutionWriter(client, this.instance);
    this.data = postgresDataStore(client, this.instance);
    this.runs = new PgRunStore(client, (principal, requestId) => this.findExecutionByRequest(principal, requestId));
  }

  override async keepAlive(now: number, expiresAt: number): Promise<number> {
    const sql = this.client;
    await sql`insert into instances (id, started_at, expires_at) values (${this.instance}, ${now}, ${expiresAt})
      on conflict (id) do update set expires_at = excluded.expires_at`;
    const failed = await sql`update executions e
      set status = 'failed', error_code = 'execution_interrupted', error_message = ${INTERRUPTED}, finished_at = ${now}
      where e.status = 'running' and e.kind = 'function' and e.instance is not null and e.instance <> ${this.instance}
        and not exists (select 1 from instances i where i.id = e.instance and i.expires_at >= ${now})`;
    await sql`delete from instances where expires_at < ${now}`;
    return failed.count;
  }

  override async retire(): Promise<void> {
    await this.client`delete from instances where id = ${this.instance}`;
  }

  override getExecution(id: string) {
    return this.writer.byId(id);
  }

  override claimExecution(row: ExecutionRow) {
    return this.writer.claim(row);
  }

  override async settleExecution(id: string, settlement: ExecutionSettlement) {
    // Data writes commit with the status in one transaction of their own (SqlStore); only plain settlements batch.
    if (settlement.writes?.length) return super.settleExecution(id, settlement);
    await this.writer.settle(id, settlement);
    return settlement;
  }
}
