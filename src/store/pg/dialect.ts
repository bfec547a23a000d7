import { sql } from "drizzle-orm";
import { indexDdl } from "../data-sql.ts";
import type { Dialect } from "../dialect.ts";

const pgCast = { string: "", number: "::double precision", boolean: "::boolean", json: "" } as const;

/** PostgreSQL's side of every difference (store/dialect.ts). */
export const postgresDialect: Dialect = {
  claimable: (select) => sql`(${select.getSQL()} for update skip locked)`,

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
