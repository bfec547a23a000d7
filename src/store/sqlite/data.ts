import type { Database, SQLQueryBindings } from "bun:sqlite";
import { SharedData } from "../data-sql.ts";
import { sqliteDialect } from "./dialect.ts";
import { StatementCache } from "./statement-cache.ts";

/**
 * The data stores on SQLite, one per environment over one statement cache (statements prepared once by
 * their text, the environment a parameter); one process serves the database, so nothing to notify.
 */
export function sqliteData(client: Database, instance: string): SharedData {
  const statements = new StatementCache(client);
  return new SharedData(
    sqliteDialect,
    {
      select: async (sql, params) =>
        statements.get(sql).all(...(params as SQLQueryBindings[])) as Record<string, unknown>[],
      each: async (sql, params, take) => {
        for (const row of statements.get(sql).iterate(...(params as SQLQueryBindings[]))) {
          if (!take(row as Record<string, unknown>)) break;
        }
      },
      ddl: async (sql) => {
        client.exec(sql);
      },
      notify: async () => {},
      listen: async () => {},
    },
    instance,
  );
}
