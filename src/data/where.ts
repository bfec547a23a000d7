import type { Principal } from "../sdk/index.ts";
import type { Condition, Operand } from "../store/data.ts";
import { QueryRejected } from "./errors.ts";
import type { AttrSpec, DataSchema, EntitySpec } from "./schema.ts";

export interface WhereContext {
  schema: DataSchema;
  /** Null for a service key (rules do not apply) and while resolving a rule itself. */
  principal: Principal | null;
  /** Values the statement being planned binds so far (the store binds one per comparison, list and hop). */
  bound: { count: number };
}

const COMPARISONS = { $gt: ">", $gte: ">=", $lt: "<", $lte: "<=" } as const;
const OPERATORS = new Set(["$in", "$not", "$ne", "$isNull", "$like", "$ilike", ...Object.keys(COMPARISONS)]);

/** Matches every row: an empty clause inside and/or. */
const ALL: Condition = { kind: "and", of: [] };

/** `entity`'s view rule for the caller, as a condition; null when the caller may see every row. */
export function viewRule(entity: EntitySpec, ctx: WhereContext): Condition | null {
  if (!ctx.principal || entity.view === true) return null;
  if (entity.view === false) return { kind: "false" };
  const bound = substituteAuth(entity.view, ctx.principal);
  // A rule is evaluated with full sight: rules that follow links must not be filtered by other rules.
  return resolveWhere(bound, entity, { ...ctx, principal: null });
}

/** Both conditions (either may be absent). */
export function both(a: Condition | null, b: Condition | null): Condition | null {
  if (!a) return b;
  if (!b) return a;
  return { kind: "and", of: [a, b] };
}

// Far beyond any hand-written query; keeps a hostile one from exhausting the stack or the database's parameter limit.
const MAX_DEPTH = 32;
const MAX_PARAMS = 1_000;
/**
 * The characters a where's $like and $ilike patterns may hold together. Matching costs up to the pattern's
 * length × the value's (SQLite's matcher runs on the event loop); the store matches at most a value's
 * first LIKE_WINDOW characters (store/data-sql.ts), so a row costs at most 128 × 4,096 steps: about 1 ms.
 */
const LIKE_PATTERN_BUDGET = 128;

/**
 * Checks an InstaQL where-clause (ANDed keys; `and`/`or` lists; dotted paths through links) against the
 * schema and resolves it into the store's condition tree, with the rules of every entity a path reaches.
 * Null for an empty clause.
 */
export function resolveWhere(where: unknown, entity: EntitySpec, ctx: WhereContext, depth = 0): Condition | null {
  if (typeof where !== "object" || where === null || Array.isArray(where)) {
    throw new QueryRejected(`where on ${entity.name} must be an object`);
  }
  if (depth > MAX_DEPTH) throw new QueryRejected(`where nests deeper than ${MAX_DEPTH} levels`);
  if (ctx.bound.count > MAX_PARAMS) throw new QueryRejected(`where has more than ${MAX_PARAMS} conditions`);
  const parts: Condition[] = [];
  for (const [key, value] of Object.entries(where)) {
    if (key === "and" || key === "or") {
      if (!Array.isArray(value) || value.length === 0)
        throw new QueryRejected(`${key} must be a non-empty list of clauses`);
      parts.push({ kind: key, of: value.map((clause) => resolveWhere(clause, entity, ctx, depth + 1) ?? ALL) });
    } else {
      parts.push(resolvePath(key.split("."), value, entity, ctx));
    }
  }
  const condition = allOf(parts);
  if (depth === 0) checkLikeBudget(condition);
  return condition;
}

function checkLikeBudget(condition: Condition | null) {
  const used = likeCharacters(condition);
  if (used > LIKE_PATTERN_BUDGET) {
    throw new QueryRejected(
      `$like and $ilike patterns may hold at most ${LIKE_PATTERN_BUDGET} characters together in one where; these hold ${used}`,
    );
  }
}

const likeCharacters = (c: Condition | null): number => {
  if (!c) return 0;
  if (c.kind === "like") return c.pattern.length;
  if (c.kind === "and" || c.kind === "or") return c.of.reduce((sum, part) => sum + likeCharacters(part), 0);
  if (c.kind === "exists") return likeCharacters(c.where);
  return 0;
};

function resolvePath(path: string[], value: unknown, entity: EntitySpec, ctx: WhereContext): Condition {
  const [head = "", ...rest] = path;
  if (rest.length === 0) return resolveCondition(head, value, entity, ctx);
  const side = entity.links.get(head);
  if (!side) throw new QueryRejected(`${entity.name} has no link named ${head}`);
  const target = ctx.schema.entities.get(side.to) as EntitySpec;
  ctx.bound.count++;
  const where = both(resolvePath(rest, value, target, ctx), viewRule(target, ctx)) as Condition;
  return { kind: "exists", hop: { link: side.link.name, direction: side.direction }, where };
}

function resolveCondition(label: string, value: unknown, entity: EntitySpec, ctx: WhereContext): Condition {
  const isId = label === "id";
  const attr = isId ? null : entity.attrs.get(label);
  if (!isId && !attr) throw new QueryRejected(`${entity.name} has no attribute ${label}`);
  const on: Operand = attr ?? "id";
  const checked = (v: unknown) => {
    ctx.bound.count++;
    return attr ? checkValue(attr, v) : checkId(v);
  };

  if (value === null) return { kind: "isNull", on, isNull: true };
  if (typeof value !== "object" || Array.isArray(value)) {
    if (attr?.type === "json") throw new QueryRejected(`${entity.name}.${label} holds JSON; only $isNull can test it`);
    return { kind: "compare", on, op: "=", value: checked(value) };
  }
  const conditions: Condition[] = [];
  for (const [op, operand] of Object.entries(value)) {
    if (!OPERATORS.has(op)) throw new QueryRejected(`unknown operator ${op} on ${entity.name}.${label}`);
    if (op === "$isNull") {
      if (typeof operand !== "boolean") throw new QueryRejected("$isNull takes true or false");
      conditions.push({ kind: "isNull", on, isNull: operand });
      continue;
    }
    if (attr?.type === "json") throw new QueryRejected(`${entity.name}.${label} holds JSON; only $isNull can test it`);
    if (op === "$in") {
      if (!Array.isArray(operand)) throw new QueryRejected("$in takes a list");
      const values = operand.map((v) => (attr ? checkValue(attr, v) : checkId(v)));
      if (values.length > 0) ctx.bound.count++;
      conditions.push({ kind: "in", on, values });
    } else if (op === "$not" || op === "$ne") {
      // Like InstaQL: an entity without the attribute matches too.
      conditions.push({
        kind: "or",
        of: [
          { kind: "isNull", on, isNull: true },
          { kind: "compare", on, op: "<>", value: checked(operand) },
        ],
      });
    } else if (op === "$like" || op === "$ilike") {
      if (attr?.type !== "string" || typeof operand !== "string") {
        throw new QueryRejected(`${op} needs a string attribute and a string pattern`);
      }
      ctx.bound.count++;
      conditions.push({ kind: "like", on, pattern: operand, caseInsensitive: op === "$ilike" });
    } else {
      if (operand === null || typeof operand === "object")
        throw new QueryRejected(`${op} takes a string, number or boolean`);
      conditions.push({
        kind: "compare",
        on,
        op: COMPARISONS[op as keyof typeof COMPARISONS],
        value: checked(operand),
      });
    }
  }
  const condition = allOf(conditions);
  if (!condition) throw new QueryRejected(`empty condition on ${entity.name}.${label}`);
  return condition;

  function checkValue(a: AttrSpec, v: unknown): unknown {
    const ok = v === null || typeof v === a.type;
    if (!ok) throw new QueryRejected(`${entity.name}.${label} is a ${a.type}; got ${JSON.stringify(v)}`);
    return v;
  }
}

const allOf = (conditions: Condition[]): Condition | null =>
  conditions.length === 0
    ? null
    : conditions.length === 1
      ? (conditions[0] as Condition)
      : { kind: "and", of: conditions };

function checkId(value: unknown): string {
  if (typeof value !== "string") throw new QueryRejected(`ids are strings; got ${JSON.stringify(value)}`);
  return value;
}

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
