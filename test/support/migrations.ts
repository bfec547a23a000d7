import { Database } from "bun:sqlite";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { drizzle as sqliteDrizzle } from "drizzle-orm/bun-sqlite";
import { drizzle as pgDrizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { readMigrations } from "../../src/store/migrations.ts";

interface Migrator {
  dialect: { migrate(migrations: unknown, session: unknown, config?: unknown): unknown };
  session: unknown;
}

/**
 * The database at `url` as the release before migration `tag` left it: the migrations before that one
 * applied (a migration test then opens the store, which applies `tag` and those after it).
 */
export async function migrateToBefore(tag: string, dialect: "sqlite" | "pg", url: string): Promise<void> {
  const journal = JSON.parse(
    readFileSync(join(import.meta.dir, "../../drizzle", dialect, "meta/_journal.json"), "utf8"),
  ) as { entries: { tag: string; when: number }[] };
  const mine = journal.entries.find((e) => e.tag.endsWith(tag));
  if (!mine) throw new Error(`no migration ${tag} in drizzle/${dialect}`);
  const before = readMigrations(dialect).filter((m) => m.folderMillis < mine.when);
  if (dialect === "sqlite") {
    const client = new Database(url.replace(/^sqlite:/, ""), { create: true });
    const db = sqliteDrizzle({ client }) as unknown as Migrator;
    db.dialect.migrate(before, db.session);
    client.close();
    return;
  }
  const client = postgres(url, { max: 1, onnotice: () => {} });
  const db = pgDrizzle({ client }) as unknown as Migrator;
  await db.dialect.migrate(before, db.session, { migrationsFolder: "drizzle/pg" });
  await client.end();
}
