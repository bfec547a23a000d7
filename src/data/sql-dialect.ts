import type { AttrSpec, AttrType } from "./schema.ts";

/**
 * The few places where SQLite and PostgreSQL spell the same thing differently. Everything else the
 * query compiler writes is plain SQL both accept. Entity and attribute names are checked identifiers
 * (schema.ts), so they are written into SQL text; every value is a bound parameter.
 */
export interface SqlDialect {
  readonly name: "sqlite" | "postgres";
  /** Appends a parameter and returns its placeholder. */
  param(params: unknown[], value: unknown): string;
  /** The attribute's value as a typed scalar (the same expression the attribute's index is built on). */
  attr(alias: string, attr: AttrSpec): string;
  /** Membership in a list given as one JSON array parameter (any length, one statement); `type` of the values, text when absent. */
  inJsonList(expr: string, params: unknown[], values: unknown[], type?: AttrType): string;
  like(expr: string, params: unknown[], pattern: string, caseInsensitive: boolean): string;
  /** A value bound for comparison with `attr(...)`: booleans differ (SQLite's JSON booleans are 0/1). */
  scalar(attr: AttrSpec, value: unknown): unknown;
  indexDdl(attr: AttrSpec): string;
}

/**
 * A partial index per indexed attribute, on the very expression queries compare. A plain index also
 * carries the default order (created_at, id), so "where x = ? order by default limit n" reads just n
 * entries instead of sorting; a unique index enforces uniqueness.
 */
function indexDdl(attr: AttrSpec, expr: string): string {
  const columns = attr.unique ? expr : `${expr}, created_at, id`;
  const name = `data_idx_${attr.entity}_${attr.label}`;
  return `create ${attr.unique ? "unique " : ""}index if not exists ${name} on data_entities (${columns}) where entity = '${attr.entity}'`;
}

export const sqliteDialect: SqlDialect = {
  name: "sqlite",
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
  indexDdl: (attr) => indexDdl(attr, `json_extract(doc, '$.${attr.label}')`),
};

const pgCast = { string: "", number: "::double precision", boolean: "::boolean", json: "" } as const;

export const postgresDialect: SqlDialect = {
  name: "postgres",
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
  indexDdl: (attr) => indexDdl(attr, postgresDialect.attr("data_entities", attr).replaceAll("data_entities.", "")),
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
