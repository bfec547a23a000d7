import { findUnsupportedCharacter, UNSUPPORTED_CHARACTERS } from "../lib/json-text.ts";
import { isObject } from "../lib/values.ts";
import type { Principal } from "../sdk/index.ts";
import {
  type ChildQuery,
  type DataStore,
  type EntityRow,
  type QueryNode,
  type ReadBudget,
  ReadBudgetSpent,
} from "../store/data.ts";
import { QueryRejected } from "./errors.ts";
import type { AttrSpec, DataSchema, EntitySpec, LinkSide } from "./schema.ts";
import { both, resolveWhere, viewRule, type WhereContext } from "./where.ts";

/** A query as checked against the schema, before it is planned for a caller. */
interface ParsedNode {
  entity: EntitySpec;
  where?: unknown;
  limit?: number;
  offset?: number;
  order?: { label: string; direction: "asc" | "desc" };
  children: { label: string; side: LinkSide; node: ParsedNode }[];
}

/** An entity in a result: its row, and for each child label the rows it links to (with the link's time). */
export interface ResultEntity {
  row: EntityRow;
  children: Map<string, { side: LinkSide; entities: (ResultEntity & { linkedAt: number })[] }>;
}

export type QueryResult = Map<string, { entity: EntitySpec; entities: ResultEntity[] }>;

/**
 * How much one query may answer (QUERY_MAX_ROWS, QUERY_MAX_BYTES): entities at every level together, and
 * the bytes of their documents as stored. A query over either is refused, having read no more than that.
 */
export interface QueryLimits {
  maxRows: number;
  maxBytes: number;
}

/** Convex's bounds on what one query reads (32,000 documents scanned, 16 MiB), which ours are modelled on. */
export const DEFAULT_QUERY_LIMITS: QueryLimits = { maxRows: 32_000, maxBytes: 16 * 1024 * 1024 };

const OPTIONS = new Set(["where", "limit", "offset", "order"]);

/** Checks an InstaQL query against the schema; every mistake is a QueryRejected naming it. */
export function parseQuery(query: unknown, schema: DataSchema): Map<string, ParsedNode> {
  if (!isObject(query) || Object.keys(query).length === 0) {
    throw new QueryRejected("query must be an object with at least one entity: { <entity>: { … } }");
  }
  // PostgreSQL cannot compare with such strings (it refuses them), SQLite can: refuse them on both.
  const unsupported = findUnsupportedCharacter(query);
  if (unsupported !== null) {
    throw new QueryRejected(`${UNSUPPORTED_CHARACTERS} cannot appear in a query (at ${unsupported})`);
  }
  const roots = new Map<string, ParsedNode>();
  for (const [name, body] of Object.entries(query)) {
    const entity = schema.entities.get(name);
    if (!entity) throw new QueryRejected(`unknown entity ${name}`);
    roots.set(name, parseNode(body, entity, schema, 0));
  }
  return roots;
}

function parseNode(body: unknown, entity: EntitySpec, schema: DataSchema, depth: number): ParsedNode {
  if (!isObject(body)) throw new QueryRejected(`${entity.name}: expected an object ({} for all)`);
  if (depth > 8) throw new QueryRejected("queries nest at most 8 levels");
  const node: ParsedNode = { entity, children: [] };
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

function parseOptions(options: unknown, node: ParsedNode, depth: number) {
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
 * Executes a parsed query: one statement per level, never one per row. The caller's view rules are part
 * of every level and every path (rows it may not see are absent, at every level); `principal` null =
 * service key. Every level is checked before the first is read. An answer over `limits` is refused
 * (QueryRejected) as soon as a level reads past them.
 */
export async function runQuery(
  roots: Map<string, ParsedNode>,
  schema: DataSchema,
  principal: Principal | null,
  store: DataStore,
  limits: QueryLimits,
): Promise<QueryResult> {
  const planned = [...roots].map(([name, node]) => ({ name, node, plan: planNode(node, schema, principal, 0) }));
  const budget: ReadBudget = { rows: limits.maxRows, bytes: limits.maxBytes };
  const result: QueryResult = new Map();
  try {
    for (const { name, node, plan } of planned) {
      const rows = await store.selectRoots(plan, budget);
      const entities = rows.map((row) => ({ row, children: new Map() }) as ResultEntity);
      await loadChildren(node, plan, entities, store, budget);
      result.set(name, { entity: node.entity, entities });
    }
  } catch (error) {
    if (error instanceof ReadBudgetSpent) throw answerTooLarge(error.spent, limits);
    throw error;
  }
  return result;
}

function answerTooLarge(spent: "rows" | "bytes", limits: QueryLimits): QueryRejected {
  const narrower = "narrow the query with where, or read it in pages with limit and offset";
  return spent === "rows"
    ? new QueryRejected(`the answer would hold more than ${limits.maxRows} entities (QUERY_MAX_ROWS): ${narrower}`, {
        details: { limitRows: limits.maxRows },
      })
    : new QueryRejected(
        `the answer would hold more than ${limits.maxBytes} bytes of entities (QUERY_MAX_BYTES): ${narrower}`,
        { details: { limitBytes: limits.maxBytes } },
      );
}

/** The store's plan of one level and those below it. */
function planNode(node: ParsedNode, schema: DataSchema, principal: Principal | null, bound: number): QueryNode {
  const ctx: WhereContext = { schema, principal, bound: { count: bound } };
  const where = node.where === undefined ? null : resolveWhere(node.where, node.entity, ctx);
  const order = node.order;
  return {
    entity: node.entity.name,
    where: both(where, viewRule(node.entity, ctx)),
    order: !order
      ? undefined
      : order.label === "serverCreatedAt"
        ? { by: "createdAt", direction: order.direction }
        : { by: node.entity.attrs.get(order.label) as AttrSpec, direction: order.direction },
    limit: node.limit,
    offset: node.offset,
    // A child level's statement binds the link and the parents' ids before its own conditions.
    children: node.children.map((child) => ({
      label: child.label,
      hop: { link: child.side.link.name, direction: child.side.direction },
      node: planNode(child.node, schema, principal, 2),
    })),
  };
}

async function loadChildren(
  node: ParsedNode,
  plan: QueryNode,
  parents: ResultEntity[],
  store: DataStore,
  budget: ReadBudget,
) {
  if (parents.length === 0) return;
  const byId = new Map(parents.map((p) => [p.row.id, p]));
  for (const [i, child] of node.children.entries()) {
    const childPlan = plan.children[i] as ChildQuery;
    const rows = await store.selectChildren(childPlan, [...byId.keys()], budget);
    for (const parent of parents) parent.children.set(child.label, { side: child.side, entities: [] });
    for (const { parentId, linkedAt, row } of rows) {
      byId.get(parentId)?.children.get(child.label)?.entities.push({ row, children: new Map(), linkedAt });
    }
    // Grandchildren attach to the very objects listed under each parent.
    const listed = parents.flatMap((p) => p.children.get(child.label)?.entities ?? []);
    await loadChildren(child.node, childPlan.node, listed, store, budget);
  }
}

/** Every entity a query's result depends on: its levels, the entities its paths cross, and those its rules read. */
export function entitiesRead(roots: Map<string, ParsedNode>, schema: DataSchema): Set<string> {
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
  const visitNode = (node: ParsedNode) => {
    addEntity(node.entity);
    visitWhere(node.where, node.entity);
    for (const child of node.children) visitNode(child.node);
  };
  for (const node of roots.values()) visitNode(node);
  return read;
}
