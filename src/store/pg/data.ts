import type { ParameterOrJSON, Sql } from "postgres";
import type { DataStore } from "../data.ts";
import { indexDdl, SqlDataStore, type SqlDialect } from "../data-sql.ts";

const pgCast = { string: "", number: "::double precision", boolean: "::boolean", json: "" } as const;

/** PostgreSQL's spelling of the data compiler's few dialect-dependent expressions (data-sql.ts). */
export const postgresDialect: SqlDialect = {
  param: (params, value) => {
    params.push(value);
    return `$${params.length}`;
  },
  attr: (alias, attr) =>
    attr.type === "json" ? `${alias}.doc->'${attr.label}'` : `((${alias}.doc->>'${attr.label}')${pgCast[attr.type]})`,
  inJsonList(expr, params, values, type) {
    const element = `jsonb_array_elements_text(${this.param(params, JSON.stringify(values))}::text::jsonb)`;
    return `${expr} in (select ${type ? `(${element})${pgCast[type]}` : element})`;
  },
  like(expr, params, pattern, caseInsensitive) {
    return `${expr} ${caseInsensitive ? "ilike" : "like"} ${this.param(params, pattern)}`;
  },
  scalar: (_attr, value) => value,
  json(params, doc) {
    return `${this.param(params, JSON.stringify(doc))}::text::jsonb`;
  },
  // As text, not parsed by the driver: its size is what a read budget counts (jsonb is sent as text anyway).
  docText: (alias) => `${alias}.doc::text`,
  indexDdl: (attr) => indexDdl(attr, postgresDialect.attr("data_entities", attr).replaceAll("data_entities.", "")),
  // PostgreSQL's planner, with statistics, reads the index for a top-N query by itself.
  readInOrder: () => "",
};

const CHANNEL = "actuate_data_changes";

/** Rows a cursor fetches at a time: at most what a read holds past the row its budget stopped at. */
const CURSOR_ROWS = 100;

/** The data store on PostgreSQL: statements prepared by the driver (by their text); changes relayed over LISTEN/NOTIFY. */
export function postgresDataStore(client: Sql, instance: string): DataStore {
  return new SqlDataStore(
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
