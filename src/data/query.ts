import { findUnsupportedCharacter, UNSUPPORTED_CHARACTERS } from "../lib/json-text.ts";
import type { Principal } from "../sdk/index.ts";
import { QueryRejected } from "./errors.ts";
import type { DataSchema, EntitySpec, LinkSide } from "./schema.ts";
import type { SqlDialect } from "./sql-dialect.ts";
import { compileWhere, fromColumn, toColumn, viewRule, type WhereContext } from "./where.ts";

/** Runs one SQL statement; rows come back with `doc` as stored (JSON text on SQLite, an object on PostgreSQL). */
export type SqlRunner = (sql: string, params: unknown[]) => Promise<Record<string, unknown>[]>;

interface QueryNode {
  entity: EntitySpec;
  where?: unknown;
  limit?: number;
  offset?: number;
  order?: { label: string; direction: "asc" | "desc" };
  children: { label: string; side: LinkSide; node: QueryNode }[];
}

export interface EntityRow {
  id: string;
  doc: Record<string, unknown>;
  createdAt: number;
}

/** An entity in a result: its row, and for each child label the rows it links to (with the link's time). */
export interface ResultEntity {
  row: EntityRow;
  children: Map<string, { side: LinkSide; entities: (ResultEntity & { linkedAt: number })[] }>;
}

export type QueryResult = Map<string, { entity: EntitySpec; entities: ResultEntity[] }>;

const OPTIONS = new Set(["where", "limit", "offset", "order"]);
// An offset needs a limit in SQLite's grammar; PostgreSQL has no "-1". Larger than any page we allow.
const UNLIMITED = 1_000_000_000;

/** Checks an InstaQL query against the schema; every mistake is a QueryRejected naming it. */
export function parseQuery(query: unknown, schema: DataSchema): Map<string, QueryNode> {
  if (!isObject(query) || Object.keys(query).length === 0) {
    throw new QueryRejected("query must be an object with at least one entity: { <entity>: { … } }");
  }
  // PostgreSQL cannot compare with such strings (it refuses them), SQLite can: refuse them on both.
  const unsupported = findUnsupportedCharacter(query);
  if (unsupported !== null) {
    throw new QueryRejected(`${UNSUPPORTED_CHARACTERS} cannot appear in a query (at ${unsupported})`);
  }
  const roots = new Map<string, QueryNode>();
  for (const [name, body] of Object.entries(query)) {
    const entity = schema.entities.get(name);
    if (!entity) throw new QueryRejected(`unknown entity ${name}`);
    roots.set(name, parseNode(body, entity, schema, 0));
  }
  return roots;
}

function parseNode(body: unknown, entity: EntitySpec, schema: DataSchema, depth: number): QueryNode {
  if (!isObject(body)) throw new QueryRejected(`${entity.name}: expected an object ({} for all)`);
  if (depth > 8) throw new QueryRejected("queries nest at most 8 levels");
  const node: QueryNode = { entity, children: [] };
  for (const [key, value] of Object.entries(body)) {
    if (key === "$") {
      parseOptions(value, node, depth);
      continue;
    }
    const side = entity.links.get(key);
    if (!side) throw new QueryRejected(`${entity.name} has no link named ${key}`);
    node.children.push({
      label: key,
      side,
      node: parseNode(value, schema.entities.get(side.to) as EntitySpec, schema, depth + 1),
    });
  }
  return node;
}

function parseOptions(options: unknown, node: QueryNode, depth: number) {
  const name = node.entity.name;
  if (!isObject(options)) throw new QueryRejected(`${name}.$ must be an object`);
  for (const key of Object.keys(options)) {
    if (!OPTIONS.has(key)) throw new QueryRejected(`${name}.$ takes where, limit, offset and order; not ${key}`);
  }
  if (options.where !== undefined) node.where = options.where;
  for (const key of ["limit", "offset"] as const) {
    const value = options[key];
    if (value === undefined) continue;
    const min = key === "limit" ? 1 : 0;
    if (!Number.isInteger(value) || (value as number) < min || (value as number) > 10_000) {
      throw new QueryRejected(`${name}.$.${key} must be an integer from ${min} to 10000`);
    }
    if (key === "offset" && depth > 0) throw new QueryRejected(`${name}.$.offset is allowed at the top level only`);
    node[key] = value as number;
  }
  if (options.order !== undefined) {
    const entries = isObject(options.order) ? Object.entries(options.order) : [];
    const [label, direction] = entries[0] ?? [];
    if (entries.length !== 1 || (direction !== "asc" && direction !== "desc") || !label) {
      throw new QueryRejected(`${name}.$.order must be { <attribute>: "asc" | "desc" }`);
    }
    const attr = node.entity.attrs.get(label);
    if (label !== "serverCreatedAt" && (!attr || attr.type === "json")) {
      throw new QueryRejected(`${name}.$.order: ${label} is not a string, number or boolean attribute`);
    }
    node.order = { label, direction };
  }
}

/**
 * Executes a parsed query: one SQL statement per node, never one per row. The caller's view rules are
 * part of every statement (rows it may not see are absent, at every level); `principal` null = service key.
 */
export async function runQuery(
  roots: Map<string, QueryNode>,
  schema: DataSchema,
  dialect: SqlDialect,
  principal: Principal | null,
  run: SqlRunner,
): Promise<QueryResult> {
  const result: QueryResult = new Map();
  for (const [name, node] of roots) {
    const ctx: WhereContext = { schema, dialect, params: [], principal, aliases: { next: 0 } };
    // The entity name is a checked identifier; written as a literal, it lets the planner use the partial indexes.
    const conditions = [`e.entity = '${node.entity.name}'`, ...nodeConditions(node, "e", ctx)];
    let sql = `select e.id, e.doc, e.created_at from data_entities e where ${conditions.join(" and ")} order by ${orderBy(node, "e", dialect)}`;
    if (node.limit !== undefined || node.offset !== undefined) {
      sql += ` limit ${dialect.param(ctx.params, node.limit ?? UNLIMITED)} offset ${dialect.param(ctx.params, node.offset ?? 0)}`;
    }
    const entities = (await run(sql, ctx.params)).map(
      (r) => ({ row: entityRow(r), children: new Map() }) as ResultEntity,
    );
    await loadChildren(node, entities, schema, dialect, principal, run);
    result.set(name, { entity: node.entity, entities });
  }
  return result;
}

async function loadChildren(
  node: QueryNode,
  parents: ResultEntity[],
  schema: DataSchema,
  dialect: SqlDialect,
  principal: Principal | null,
  run: SqlRunner,
) {
  if (parents.length === 0) return;
  const byId = new Map(parents.map((p) => [p.row.id, p]));
  for (const child of node.children) {
    const ctx: WhereContext = { schema, dialect, params: [], principal, aliases: { next: 0 } };
    const conditions = [
      `l.link = ${dialect.param(ctx.params, child.side.link.name)}`,
      dialect.inJsonList(`l.${fromColumn(child.side)}`, ctx.params, [...byId.keys()]),
      ...nodeConditions(child.node, "e", ctx),
    ];
    const order = orderBy(child.node, "e", dialect);
    const from = `from data_links l join data_entities e on e.id = l.${toColumn(child.side)} where ${conditions.join(" and ")}`;
    const columns = `l.${fromColumn(child.side)} as parent_id, l.created_at as linked_at, e.id, e.doc, e.created_at`;
    // A has-one end holds one link at most (writes replace it), so only a nested limit needs ranking per parent.
    const limit = child.node.limit;
    const sql =
      limit === undefined
        ? `select ${columns} ${from} order by ${order}`
        : `select * from (select ${columns}, row_number() over (partition by l.${fromColumn(child.side)} order by ${order}) as position ${from}) ranked
           where position <= ${dialect.param(ctx.params, limit)} order by position`;
    const rows = await run(sql, ctx.params);
    for (const parent of parents) parent.children.set(child.label, { side: child.side, entities: [] });
    for (const r of rows) {
      const entity = { row: entityRow(r), children: new Map(), linkedAt: Number(r.linked_at) };
      byId.get(String(r.parent_id))?.children.get(child.label)?.entities.push(entity);
    }
    // Grandchildren attach to the very objects listed under each parent.
    const listed = parents.flatMap((p) => p.children.get(child.label)?.entities ?? []);
    await loadChildren(child.node, listed, schema, dialect, principal, run);
  }
}

/** Every entity a query's result depends on: its levels, the entities its paths cross, and those its rules read. */
export function entitiesRead(roots: Map<string, QueryNode>, schema: DataSchema): Set<string> {
  const read = new Set<string>();
  const visitWhere = (where: unknown, entity: EntitySpec) => {
    if (!isObject(where)) return;
    for (const [key, value] of Object.entries(where)) {
      if ((key === "and" || key === "or") && Array.isArray(value))
        for (const clause of value) visitWhere(clause, entity);
      let current: EntitySpec | undefined = entity;
      for (const label of key.split(".").slice(0, -1)) {
        const side: LinkSide | undefined = current?.links.get(label);
        current = side ? schema.entities.get(side.to) : undefined;
        if (current) addEntity(current);
      }
    }
  };
  const addEntity = (entity: EntitySpec) => {
    if (read.has(entity.name)) return;
    read.add(entity.name);
    if (typeof entity.view === "object") visitWhere(entity.view, entity);
  };
  const visitNode = (node: QueryNode) => {
    addEntity(node.entity);
    visitWhere(node.where, node.entity);
    for (const child of node.children) visitNode(child.node);
  };
  for (const node of roots.values()) visitNode(node);
  return read;
}

function nodeConditions(node: QueryNode, alias: string, ctx: WhereContext): string[] {
  return [
    node.where === undefined ? "" : compileWhere(node.where, node.entity, alias, ctx),
    viewRule(node.entity, alias, ctx),
  ].filter(Boolean);
}

function orderBy(node: QueryNode, alias: string, dialect: SqlDialect): string {
  const tail = `${alias}.created_at, ${alias}.id`;
  if (!node.order) return tail;
  const direction = node.order.direction;
  if (node.order.label === "serverCreatedAt") return `${alias}.created_at ${direction}, ${alias}.id ${direction}`;
  const attr = node.entity.attrs.get(node.order.label);
  const expr = dialect.attr(alias, attr as never);
  // A required attribute is never absent: ordering by it alone lets the database read its index in order
  // and stop at the limit (with the "is null" term first it sorted every row of the entity per query).
  if (attr && !attr.optional) return `${expr} ${direction}, ${tail}`;
  // Absent values last in both directions, on both databases.
  return `(${expr} is null), ${expr} ${direction}, ${tail}`;
}

function entityRow(raw: Record<string, unknown>): EntityRow {
  const doc = typeof raw.doc === "string" ? JSON.parse(raw.doc) : raw.doc;
  return { id: String(raw.id), doc: doc as Record<string, unknown>, createdAt: Number(raw.created_at) };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
