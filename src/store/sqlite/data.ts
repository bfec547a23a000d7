import type { Database, SQLQueryBindings } from "bun:sqlite";
import type { DataStore } from "../data.ts";
import { SqlDataStore } from "../data-sql.ts";
import { sqliteDialect } from "./dialect.ts";
import { StatementCache } from "./statement-cache.ts";

/** The data store on SQLite: statements prepared once by their text; one process serves the database, so nothing to notify. */
export function sqliteDataStore(client: Database, instance: string): DataStore {
  const statements = new StatementCache(client);
  return new SqlDataStore(
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
