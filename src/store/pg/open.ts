import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { SqlStore } from "../sql-store.ts";
import * as schema from "./schema.ts";

const migrationsFolder = new URL("../../../drizzle/pg", import.meta.url).pathname;
/** Serializes migrations when several instances start at once on one database. */
const MIGRATION_LOCK = 7_351_100_001;

export async function openPostgresStore(url: string): Promise<SqlStore> {
  await migrateUnderLock(url);
  const client = postgres(url, { max: 10, onnotice: () => {} });
  return new SqlStore("postgres", drizzle({ client, schema }), schema, () => client.end({ timeout: 5 }));
}

async function migrateUnderLock(url: string): Promise<void> {
  const session = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await session`select pg_advisory_lock(${MIGRATION_LOCK})`;
    await migrate(drizzle({ client: session }), { migrationsFolder });
  } finally {
    await session.end({ timeout: 5 });
  }
}
