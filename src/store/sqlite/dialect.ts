import { sql } from "drizzle-orm";
import { indexDdl, indexName } from "../data-sql.ts";
import type { Dialect } from "../dialect.ts";

/** SQLite's side of every difference (store/dialect.ts). */
export const sqliteDialect: Dialect = {
  // One process writes a SQLite database, one transaction at a time: no other claim can hold the rows.
  claimable: (select) => sql`${select}`,

  param: (params, value) => {
    params.push(value);
    return "?";
  },
  attr: (alias, attr) => `json_extract(${alias}.doc, '$.${attr.label}')`,
  inJsonList(expr, params, values) {
    return `${expr} in (select value from json_each(${this.param(params, JSON.stringify(values))}))`;
  },
  like(expr, params, pattern, caseInsensitive) {
    if (caseInsensitive) return `${expr} like ${this.param(params, pattern)} escape '\\'`;
    // SQLite's LIKE ignores ASCII case; GLOB does not. Translate the LIKE pattern (% _ \) to GLOB.
    return `${expr} glob ${this.param(params, likeToGlob(pattern))}`;
  },
  scalar: (attr, value) => (attr.type === "boolean" && typeof value === "boolean" ? (value ? 1 : 0) : value),
  json(params, doc) {
    return this.param(params, JSON.stringify(doc));
  },
  docText: (alias) => `${alias}.doc`,
  indexDdl: (attr) => indexDdl(attr, `json_extract(doc, '$.${attr.label}')`),
  // SQLite's planner prefers the (entity, created_at) index and sorts every row of the entity for a
  // "first N by priority": at 30,000 rows 25–37 ms a query, against 0.05 ms reading the attribute's
  // index (the soak, BENCHMARKS.md; it starved every request, statements block). Forced for top-N only.
  readInOrder: (entity, attr) => ` indexed by ${indexName(entity, attr.label)}`,
};

function likeToGlob(pattern: string): string {
  let glob = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === "\\" && i + 1 < pattern.length) glob += globLiteral(pattern[++i] as string);
    else if (c === "%") glob += "*";
    else if (c === "_") glob += "?";
    else glob += globLiteral(c);
  }
  return glob;
}

const globLiteral = (c: string) => (c === "*" || c === "?" || c === "[" ? `[${c}]` : c);
