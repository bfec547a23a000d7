import type { ParameterOrJSON, Sql } from "postgres";
import { SharedData } from "../data-sql.ts";
import { postgresDialect } from "./dialect.ts";

const CHANNEL = "actuate_data_changes";

/** Rows a cursor fetches at a time: at most what a read holds past the row its budget stopped at. */
const CURSOR_ROWS = 100;

/**
 * The data stores on PostgreSQL, one per environment: statements prepared by the driver (by their text,
 * the environment a parameter); changes relayed over one LISTEN for all environments, each notification
 * naming its environment.
 */
export function postgresData(client: Sql, instance: string): SharedData {
  return new SharedData(
    postgresDialect,
    {
      select: async (sql, params) => [
        ...(await client.unsafe(sql, params as ParameterOrJSON<never>[], { prepare: true })),
      ],
      each: async (sql, params, take) => {
        const rows = client.unsafe(sql, params as ParameterOrJSON<never>[], { prepare: true }).cursor(CURSOR_ROWS);
        for await (const batch of rows) {
          for (const row of batch) if (!take(row)) return;
        }
      },
      ddl: async (sql) => {
        await client.unsafe(sql);
      },
      notify: async (payload) => {
        await client.notify(CHANNEL, payload);
      },
      listen: async (listener) => {
        await client.listen(CHANNEL, listener);
      },
    },
    instance,
  );
}
