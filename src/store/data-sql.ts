import {
  type ChildQuery,
  type Condition,
  type DataStore,
  type EntityRow,
  type Hop,
  type IndexedAttr,
  type LinkedRow,
  type Operand,
  type QueryNode,
  type ReadBudget,
  ReadBudgetSpent,
} from "./data.ts";
import type { Dialect } from "./dialect.ts";

/** One statement and its parameters, in the dialect's placeholders. */
export interface Statement {
  sql: string;
  params: unknown[];
}

/** The driver calls a dialect's data store makes; everything else is written once, here. */
export interface DataConnection {
  /** Runs one read statement (prepared and cached by its text). Rows carry `doc` as stored: JSON text or an object. */
  select(sql: string, params: unknown[]): Promise<Record<string, unknown>[]>;
  /**
   * Runs one read statement and hands its rows to `take` as the database delivers them, until there are
   * no more or `take` answers false: then the statement is ended and no further row is read.
   */
  each(sql: string, params: unknown[], take: (row: Record<string, unknown>) => boolean): Promise<void>;
  /** Runs one DDL statement. */
  ddl(sql: string): Promise<void>;
  /** Sends to / hears from the other instances sharing the database; a no-op where one process serves it. */
  notify(payload: string): Promise<void>;
  listen(listener: (payload: string) => void): Promise<void>;
}

// An offset needs a limit in SQLite's grammar; PostgreSQL has no "-1". Larger than any page data/ allows.
const UNLIMITED = 1_000_000_000;

/** Rows a level reads in one plain statement before it reads row by row (see `SqlDataStore.read`). */
const FIRST_READ = 100;

/**
 * What the data stores of every environment share in one process: the dialect, the connection (its
 * statement cache, PostgreSQL's one LISTEN) and the relay of change notifications.
 */
export class SharedData {
  private readonly listeners = new Map<number, Set<(entities: string[]) => void>>();
  private listening: Promise<void> | null = null;

  constructor(
    readonly dialect: Dialect,
    readonly connection: DataConnection,
    /** This process, so that it does not hear its own notifications. */
    readonly instance: string,
  ) {}

  /** Environment `id`'s data store: an object binding the id, nothing prepared or opened. */
  environment(id: number): DataStore {
    return new SqlDataStore(this, id);
  }

  async notify(environment: number, entities: string[]): Promise<void> {
    const change: Change = { origin: this.instance, environment, entities };
    await this.connection.notify(JSON.stringify(change));
  }

  /** Hears the other instances' changes of `environment`; the connection listens once for all of them. */
  listen(environment: number, listener: (entities: string[]) => void): Promise<void> {
    const own = this.listeners.get(environment) ?? new Set();
    this.listeners.set(environment, own.add(listener));
    this.listening ??= this.connection
      .listen((payload) => this.deliver(payload))
      .catch((error) => {
        this.listening = null;
        throw error;
      });
    return this.listening;
  }

  private deliver(payload: string) {
    const change = JSON.parse(payload) as Change;
    if (change.origin === this.instance) return;
    // A notification sent before environments existed names none: it was environment 1's.
    for (const listener of this.listeners.get(change.environment ?? 1) ?? []) listener(change.entities);
  }
}

/** A change notification's payload. */
interface Change {
  origin: string;
  /** Absent from an instance of a version before environments (a rolling upgrade). */
  environment?: number;
  entities: string[];
}

/** The data store of one dialect and environment: the compiler below over the shared connection. */
export class SqlDataStore implements DataStore {
  private readonly dialect: Dialect;
  private readonly connection: DataConnection;

  constructor(
    private readonly shared: SharedData,
    private readonly environment: number,
  ) {
    this.dialect = shared.dialect;
    this.connection = shared.connection;
  }

  selectRoots(node: QueryNode, budget: ReadBudget): Promise<EntityRow[]> {
    return this.read((cap) => rootsStatement(node, this.dialect, this.environment, cap), budget, entityRow);
  }

  async selectChildren(child: ChildQuery, parentIds: string[], budget: ReadBudget): Promise<LinkedRow[]> {
    if (parentIds.length === 0) return [];
    return this.read(
      (cap) => childrenStatement(child, parentIds, this.dialect, this.environment, cap),
      budget,
      (r) => ({
        parentId: String(r.parent_id),
        linkedAt: Number(r.linked_at),
        row: entityRow(r),
      }),
    );
  }

  /**
   * The rows of a statement (`statement(cap)` reads at most `cap`), each taken from `budget`; the first that
   * does not fit ends the read. Most answers are small: a first read of up to FIRST_READ rows, the plain
   * way (pipelined with other statements on PostgreSQL, where a cursor holds its connection alone). A
   * larger answer is read again row by row, so the database stops at the first row the budget cannot take.
   */
  private async read<T>(
    statement: (cap: number) => Statement,
    budget: ReadBudget,
    toRow: (raw: Record<string, unknown>) => T,
  ): Promise<T[]> {
    const page = Math.min(FIRST_READ, budget.rows);
    const first = statement(page + 1);
    const raws = await this.connection.select(first.sql, first.params);
    const rows: T[] = [];
    let spent: "rows" | "bytes" | null = null;
    const take = (raw: Record<string, unknown>) => {
      const bytes = Buffer.byteLength(raw.doc as string);
      if (budget.rows < 1) spent = "rows";
      else if (budget.bytes < bytes) spent = "bytes";
      if (spent) return false;
      budget.rows -= 1;
      budget.bytes -= bytes;
      rows.push(toRow(raw));
      return true;
    };
    if (raws.length <= page || page === budget.rows) {
      raws.every(take);
    } else {
      const { sql, params } = statement(budget.rows + 1);
      await this.connection.each(sql, params, take);
    }
    if (spent) throw new ReadBudgetSpent(spent);
    return rows;
  }

  async readDoc(entity: string, id: string): Promise<Record<string, unknown> | null> {
    const params: unknown[] = [];
    const sql = `select doc from data_entities where environment = ${this.mine(params)} and id = ${this.dialect.param(params, id)} and entity = ${this.dialect.param(params, entity)}`;
    const [row] = await this.connection.select(sql, params);
    return row ? parseDoc(row.doc) : null;
  }

  async countRows(entity: string): Promise<number> {
    const params: unknown[] = [];
    const sql = `select count(*) as n from data_entities where environment = ${this.mine(params)} and entity = ${this.dialect.param(params, entity)}`;
    const [row] = await this.connection.select(sql, params);
    return Number(row?.n ?? 0);
  }

  /** The environment as the next parameter of a statement. */
  private mine(params: unknown[]): string {
    return this.dialect.param(params, this.environment);
  }

  /** The indexes are every environment's (each is keyed by the environment first): the DDL binds none. */
  async ensureIndexes(attrs: IndexedAttr[]): Promise<void> {
    for (const attr of attrs) {
      await this.connection.ddl(this.dialect.indexDdl(attr));
      await this.connection.ddl(`drop index if exists ${unkeyedIndexName(attr.entity, attr.label)}`);
    }
  }

  async attrIds(keys: string[], now: number): Promise<Map<string, string>> {
    if (keys.length > 0) {
      const params: unknown[] = [];
      const rows = keys.map((key) => {
        const [entity = "", label = ""] = key.split(".");
        const values = [this.environment, crypto.randomUUID(), entity, label, now].map((v) =>
          this.dialect.param(params, v),
        );
        return `(${values.join(", ")})`;
      });
      await this.connection.select(
        `insert into data_attrs (environment, id, entity, label, created_at) values ${rows.join(", ")} on conflict (environment, entity, label) do nothing`,
        params,
      );
    }
    const params: unknown[] = [];
    const stored = await this.connection.select(
      `select id, entity, label from data_attrs where environment = ${this.mine(params)}`,
      params,
    );
    return new Map(stored.map((r) => [`${r.entity}.${r.label}`, String(r.id)]));
  }

  async notifyChange(entities: string[]): Promise<void> {
    if (entities.length === 0) return;
    await this.shared.notify(this.environment, entities);
  }

  listenChanges(listener: (entities: string[]) => void): Promise<void> {
    return this.shared.listen(this.environment, listener);
  }
}

interface Compiling {
  dialect: Dialect;
  params: unknown[];
  aliases: { next: number };
}

/** The top level of a query in `environment`: one statement, reading at most `cap` rows. */
export function rootsStatement(node: QueryNode, dialect: Dialect, environment: number, cap = UNLIMITED): Statement {
  const ctx: Compiling = { dialect, params: [], aliases: { next: 0 } };
  // The entity name is a checked identifier; written as a literal, it lets the planner use the partial indexes.
  const conditions = [`e.environment = ${dialect.param(ctx.params, environment)}`, `e.entity = '${node.entity}'`];
  if (node.where) conditions.push(condition(node.where, "e", ctx));
  const by = node.order?.by;
  // First rows by an indexed attribute that every row has: its index holds them in order (see Dialect.readInOrder).
  const hint =
    by !== undefined && by !== "createdAt" && by.indexed && !by.optional && node.limit !== undefined
      ? dialect.readInOrder(node.entity, by)
      : "";
  let sql = `select e.id, ${dialect.docText("e")} as doc, e.created_at from data_entities e${hint} where ${conditions.join(" and ")} order by ${orderBy(node, "e", dialect)}`;
  const limit = Math.min(node.limit ?? UNLIMITED, cap);
  if (limit !== UNLIMITED || node.offset !== undefined) {
    sql += ` limit ${dialect.param(ctx.params, limit)} offset ${dialect.param(ctx.params, node.offset ?? 0)}`;
  }
  return { sql, params: ctx.params };
}

/** One child level for every parent at once (`IN` a JSON list): one statement, never one per parent; at most `cap` rows. */
function childrenStatement(
  child: ChildQuery,
  parentIds: string[],
  dialect: Dialect,
  environment: number,
  cap: number,
): Statement {
  const ctx: Compiling = { dialect, params: [], aliases: { next: 0 } };
  const from = fromColumn(child.hop);
  const conditions = [
    `l.environment = ${dialect.param(ctx.params, environment)}`,
    `l.link = ${dialect.param(ctx.params, child.hop.link)}`,
    dialect.inJsonList(`l.${from}`, ctx.params, parentIds),
  ];
  if (child.node.where) conditions.push(condition(child.node.where, "e", ctx));
  const order = orderBy(child.node, "e", dialect);
  const tables = `from data_links l join data_entities e on e.environment = l.environment and e.id = l.${toColumn(child.hop)} where ${conditions.join(" and ")}`;
  const columns = `l.${from} as parent_id, l.created_at as linked_at, e.id, ${dialect.docText("e")} as doc, e.created_at`;
  // A has-one end holds one link at most (writes replace it), so only a nested limit needs ranking per parent.
  const limit = child.node.limit;
  const sql =
    limit === undefined
      ? `select ${columns} ${tables} order by ${order}`
      : `select * from (select ${columns}, row_number() over (partition by l.${from} order by ${order}) as position ${tables}) ranked
           where position <= ${dialect.param(ctx.params, limit)} order by position`;
  return { sql: `${sql} limit ${dialect.param(ctx.params, cap)}`, params: ctx.params };
}

function condition(c: Condition, alias: string, ctx: Compiling): string {
  const { dialect, params } = ctx;
  switch (c.kind) {
    case "and":
    case "or":
      if (c.of.length === 0) return c.kind === "and" ? "1 = 1" : "1 = 0";
      return `(${c.of.map((x) => `(${condition(x, alias, ctx)})`).join(` ${c.kind} `)})`;
    case "compare":
      return `${operand(c.on, alias, dialect)} ${c.op} ${dialect.param(params, bound(c.on, c.value, dialect))}`;
    case "in":
      if (c.values.length === 0) return "1 = 0";
      return dialect.inJsonList(
        operand(c.on, alias, dialect),
        params,
        c.values.map((v) => bound(c.on, v, dialect)),
        c.on === "id" ? undefined : c.on.type,
      );
    case "like":
      return dialect.like(
        `substr(${operand(c.on, alias, dialect)}, 1, ${LIKE_WINDOW})`,
        params,
        c.pattern,
        c.caseInsensitive,
      );
    case "isNull":
      return `${operand(c.on, alias, dialect)} is ${c.isNull ? "" : "not "}null`;
    case "exists": {
      const l = `l${ctx.aliases.next}`;
      const t = `t${ctx.aliases.next++}`;
      // The environment is the outer row's: the rows it reaches are of the same one.
      const conditions = [
        `${l}.environment = ${alias}.environment`,
        `${l}.link = ${dialect.param(params, c.hop.link)}`,
        `${l}.${fromColumn(c.hop)} = ${alias}.id`,
        condition(c.where, t, ctx),
      ];
      return `exists (select 1 from data_links ${l} join data_entities ${t} on ${t}.environment = ${l}.environment and ${t}.id = ${l}.${toColumn(c.hop)} where ${conditions.join(" and ")})`;
    }
    case "false":
      return "1 = 0";
  }
}

/**
 * The characters of a value that LIKE sees: SQLite's matcher, on the event loop, costs up to the value's
 * length × the pattern's (data/where.ts bounds the patterns). The same on PostgreSQL, so both answer alike.
 */
const LIKE_WINDOW = 4_096;

const operand = (on: Operand, alias: string, dialect: Dialect) =>
  on === "id" ? `${alias}.id` : dialect.attr(alias, on);

const bound = (on: Operand, value: unknown, dialect: Dialect) => (on === "id" ? value : dialect.scalar(on, value));

function orderBy(node: QueryNode, alias: string, dialect: Dialect): string {
  const tail = `${alias}.created_at, ${alias}.id`;
  const order = node.order;
  if (!order) return tail;
  const direction = order.direction;
  if (order.by === "createdAt") return `${alias}.created_at ${direction}, ${alias}.id ${direction}`;
  const expr = dialect.attr(alias, order.by);
  // A required attribute is never absent: ordering by it alone lets the database read its index in order
  // and stop at the limit (with the "is null" term first it sorted every row of the entity per query).
  if (!order.by.optional) return `${expr} ${direction}, ${tail}`;
  // Absent values last in both directions, on both databases.
  return `(${expr} is null), ${expr} ${direction}, ${tail}`;
}

const fromColumn = (hop: Hop) => (hop.direction === "forward" ? "source_id" : "target_id");
const toColumn = (hop: Hop) => (hop.direction === "forward" ? "target_id" : "source_id");

/**
 * A partial index per indexed attribute, on the environment and then the very expression queries compare
 * (`expr`): one index serves every environment, each reading its own range. A plain index also carries
 * the default order (created_at, id), so "where x = ? order by default limit n" reads just n entries
 * instead of sorting; a unique index enforces uniqueness within each environment.
 */
export const indexName = (entity: string, label: string) => `data_ix_${entity}_${label}`;

/**
 * The name these indexes had before they were keyed by environment: PostgreSQL's migration kept them (a
 * unique one would hold values unique across environments), so `ensureIndexes` drops them.
 */
const unkeyedIndexName = (entity: string, label: string) => `data_idx_${entity}_${label}`;

export function indexDdl(attr: IndexedAttr, expr: string): string {
  const columns = attr.unique ? `environment, ${expr}` : `environment, ${expr}, created_at, id`;
  const name = indexName(attr.entity, attr.label);
  return `create ${attr.unique ? "unique " : ""}index if not exists ${name} on data_entities (${columns}) where entity = '${attr.entity}'`;
}

const parseDoc = (doc: unknown) => (typeof doc === "string" ? JSON.parse(doc) : doc) as Record<string, unknown>;

function entityRow(raw: Record<string, unknown>): EntityRow {
  return { id: String(raw.id), doc: parseDoc(raw.doc), createdAt: Number(raw.created_at) };
}
