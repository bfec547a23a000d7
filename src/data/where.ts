import type { Principal } from "../sdk/index.ts";
import { QueryRejected } from "./errors.ts";
import type { AttrSpec, DataSchema, EntitySpec, LinkSide } from "./schema.ts";
import type { SqlDialect } from "./sql-dialect.ts";

export interface WhereContext {
  schema: DataSchema;
  dialect: SqlDialect;
  params: unknown[];
  /** Null for a service key (rules do not apply) and while compiling a rule itself. */
  principal: Principal | null;
  aliases: { next: number };
}

const COMPARISONS = { $gt: ">", $gte: ">=", $lt: "<", $lte: "<=" } as const;
const OPERATORS = new Set(["$in", "$not", "$ne", "$isNull", "$like", "$ilike", ...Object.keys(COMPARISONS)]);

/** SQL for `entity`'s view rule on rows aliased `alias`; empty when the caller may see every row. */
export function viewRule(entity: EntitySpec, alias: string, ctx: WhereContext): string {
  if (!ctx.principal || entity.view === true) return "";
  if (entity.view === false) return "1 = 0";
  const principal = ctx.principal;
  const bound = substituteAuth(entity.view, principal);
  // A rule is evaluated with full sight: rules that follow links must not be filtered by other rules.
  return compileWhere(bound, entity, alias, { ...ctx, principal: null });
}

// Far beyond any hand-written query; keeps a hostile one from exhausting the stack or the database's parameter limit.
const MAX_DEPTH = 32;
const MAX_PARAMS = 1_000;

/** Compiles an InstaQL where-clause (ANDed keys; `and`/`or` lists; dotted paths through links) for rows `alias`. */
export function compileWhere(where: unknown, entity: EntitySpec, alias: string, ctx: WhereContext, depth = 0): string {
  if (typeof where !== "object" || where === null || Array.isArray(where)) {
    throw new QueryRejected(`where on ${entity.name} must be an object`);
  }
  if (depth > MAX_DEPTH) throw new QueryRejected(`where nests deeper than ${MAX_DEPTH} levels`);
  if (ctx.params.length > MAX_PARAMS) throw new QueryRejected(`where has more than ${MAX_PARAMS} conditions`);
  const parts: string[] = [];
  for (const [key, value] of Object.entries(where)) {
    if (key === "and" || key === "or") {
      if (!Array.isArray(value) || value.length === 0)
        throw new QueryRejected(`${key} must be a non-empty list of clauses`);
      const clauses = value
        .map((clause) => compileWhere(clause, entity, alias, ctx, depth + 1))
        .map((sql) => `(${sql || "1 = 1"})`);
      parts.push(`(${clauses.join(key === "and" ? " and " : " or ")})`);
    } else {
      parts.push(compilePath(key.split("."), value, entity, alias, ctx));
    }
  }
  return parts.join(" and ");
}

function compilePath(path: string[], value: unknown, entity: EntitySpec, alias: string, ctx: WhereContext): string {
  const [head = "", ...rest] = path;
  if (rest.length === 0) return compileCondition(head, value, entity, alias, ctx);
  const side = entity.links.get(head);
  if (!side) throw new QueryRejected(`${entity.name} has no link named ${head}`);
  const target = ctx.schema.entities.get(side.to) as EntitySpec;
  const l = `l${ctx.aliases.next}`;
  const t = `t${ctx.aliases.next++}`;
  const conditions = [
    `${l}.link = ${ctx.dialect.param(ctx.params, side.link.name)}`,
    `${l}.${fromColumn(side)} = ${alias}.id`,
    compilePath(rest, value, target, t, ctx),
    viewRule(target, t, ctx),
  ].filter(Boolean);
  return `exists (select 1 from data_links ${l} join data_entities ${t} on ${t}.id = ${l}.${toColumn(side)} where ${conditions.join(" and ")})`;
}

function compileCondition(label: string, value: unknown, entity: EntitySpec, alias: string, ctx: WhereContext): string {
  const { dialect, params } = ctx;
  const isId = label === "id";
  const attr = isId ? null : entity.attrs.get(label);
  if (!isId && !attr) throw new QueryRejected(`${entity.name} has no attribute ${label}`);
  const expr = attr ? dialect.attr(alias, attr) : `${alias}.id`;
  const bind = (v: unknown) => dialect.param(params, attr ? checkValue(attr, v) : checkId(v));

  if (value === null) return `${expr} is null`;
  if (typeof value !== "object" || Array.isArray(value)) {
    if (attr?.type === "json") throw new QueryRejected(`${entity.name}.${label} holds JSON; only $isNull can test it`);
    return `${expr} = ${bind(value)}`;
  }
  const conditions: string[] = [];
  for (const [op, operand] of Object.entries(value)) {
    if (!OPERATORS.has(op)) throw new QueryRejected(`unknown operator ${op} on ${entity.name}.${label}`);
    if (op === "$isNull") {
      if (typeof operand !== "boolean") throw new QueryRejected("$isNull takes true or false");
      conditions.push(`${expr} is ${operand ? "" : "not "}null`);
      continue;
    }
    if (attr?.type === "json") throw new QueryRejected(`${entity.name}.${label} holds JSON; only $isNull can test it`);
    if (op === "$in") {
      if (!Array.isArray(operand)) throw new QueryRejected("$in takes a list");
      const values = operand.map((v) => (attr ? checkValue(attr, v) : checkId(v)));
      conditions.push(values.length === 0 ? "1 = 0" : dialect.inJsonList(expr, params, values, attr?.type));
    } else if (op === "$not" || op === "$ne") {
      // Like InstaQL: an entity without the attribute matches too.
      conditions.push(`(${expr} is null or ${expr} <> ${bind(operand)})`);
    } else if (op === "$like" || op === "$ilike") {
      if (attr?.type !== "string" || typeof operand !== "string") {
        throw new QueryRejected(`${op} needs a string attribute and a string pattern`);
      }
      conditions.push(dialect.like(expr, params, operand, op === "$ilike"));
    } else {
      if (operand === null || typeof operand === "object")
        throw new QueryRejected(`${op} takes a string, number or boolean`);
      conditions.push(`${expr} ${COMPARISONS[op as keyof typeof COMPARISONS]} ${bind(operand)}`);
    }
  }
  if (conditions.length === 0) throw new QueryRejected(`empty condition on ${entity.name}.${label}`);
  return conditions.join(" and ");

  function checkValue(a: AttrSpec, v: unknown): unknown {
    const ok = v === null || typeof v === a.type;
    if (!ok) throw new QueryRejected(`${entity.name}.${label} is a ${a.type}; got ${JSON.stringify(v)}`);
    return dialect.scalar(a, v);
  }
}

function checkId(value: unknown): string {
  if (typeof value !== "string") throw new QueryRejected(`ids are strings; got ${JSON.stringify(value)}`);
  return value;
}

export const fromColumn = (side: LinkSide) => (side.direction === "forward" ? "source_id" : "target_id");
export const toColumn = (side: LinkSide) => (side.direction === "forward" ? "target_id" : "source_id");

/** Replaces `"$auth.id"` / `"$auth.kind"` string values with the caller's, at any depth of a rule. */
function substituteAuth(rule: unknown, principal: Principal): unknown {
  if (rule === "$auth.id") return principal.id;
  if (rule === "$auth.kind") return principal.kind;
  if (Array.isArray(rule)) return rule.map((r) => substituteAuth(r, principal));
  if (rule && typeof rule === "object") {
    return Object.fromEntries(Object.entries(rule).map(([k, v]) => [k, substituteAuth(v, principal)]));
  }
  return rule;
}
