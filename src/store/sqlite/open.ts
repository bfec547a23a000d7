import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import type { AnyDatabase, Tables } from "../sql-store.ts";
import { SqlStore } from "../sql-store.ts";
import * as schema from "./schema.ts";

const migrationsFolder = new URL("../../../drizzle/sqlite", import.meta.url).pathname;

/** Opens (creating when missing) a SQLite database file in WAL mode and applies pending migrations. */
export function openSqliteStore(path: string): SqlStore {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const client = new Database(path, { create: true, strict: true });
  client.exec("PRAGMA journal_mode = WAL");
  client.exec("PRAGMA synchronous = NORMAL");
  // The CLI and other processes write the same file; wait for their lock instead of failing.
  client.exec("PRAGMA busy_timeout = 5000");
  client.exec("PRAGMA foreign_keys = ON");
  const db = drizzle({ client, schema });
  migrate(db, { migrationsFolder });
  return new SqlStore("sqlite", db as unknown as AnyDatabase, schema as unknown as Tables, async () => client.close());
}
