import type { ScheduledRow } from "./rows.ts";
import type { PrincipalKind } from "./statuses.ts";
/**
 * What the data layer (src/data/) asks of the store: compiled queries in, rows out; writes as DataWrite[].
 * data/ checks every query against the release schema, substitutes the caller into view rules and ANDs
 * those rules in at every level and every hop, so nothing here knows of principals, schemas or InstaQL.
 * Entity, link and attribute names arrive checked (letters, digits and _); values are always bound.
 */

export type DataAttrType = "string" | "number" | "boolean" | "json";

/** An attribute of the entity being read, and how it is stored (`json` ones can only be tested for null). */
export interface DataAttr {
  label: string;
  type: DataAttrType;
}

/** What a comparison reads: the entity's id, or one of its attributes. */
export type Operand = "id" | DataAttr;

/** One end of a link followed from the rows at hand: `forward` goes source → target. */
export interface Hop {
  link: string;
  direction: "forward" | "reverse";
}

/** A resolved condition on the rows of one entity. */
export type Condition =
  | { kind: "and"; of: Condition[] }
  | { kind: "or"; of: Condition[] }
  | { kind: "compare"; on: Operand; op: "=" | "<>" | "<" | "<=" | ">" | ">="; value: unknown }
  | { kind: "in"; on: Operand; values: unknown[] }
  /** LIKE patterns (% _ \); case-sensitive unless `caseInsensitive`, on both databases. */
  | { kind: "like"; on: Operand; pattern: string; caseInsensitive: boolean }
  | { kind: "isNull"; on: Operand; isNull: boolean }
  /** Some row reached through `hop` satisfies `where` (which holds the reached entity's own rules too). */
  | { kind: "exists"; hop: Hop; where: Condition }
  | { kind: "false" };

/**
 * Rows in creation order unless an attribute is given. An `optional` attribute may be absent: absent
 * values come last in both directions; a required one orders by itself alone, so its index can serve.
 */
export type DataOrder =
  | { by: "createdAt"; direction: "asc" | "desc" }
  | { by: DataAttr & { optional: boolean; indexed: boolean }; direction: "asc" | "desc" };

/** One level of a compiled query: the rows of `entity` that satisfy `where` (null: all of them). */
export interface QueryNode {
  entity: string;
  where: Condition | null;
  order?: DataOrder;
  /** On a child level, per parent. */
  limit?: number;
  /** Top level only. */
  offset?: number;
  children: ChildQuery[];
}

/** The rows linked to each parent through `hop` (labelled `label` in results). */
export interface ChildQuery {
  label: string;
  hop: Hop;
  node: QueryNode;
}

export interface EntityRow {
  id: string;
  doc: Record<string, unknown>;
  createdAt: number;
}

/** A child row, with the parent it belongs to and when the link was made. */
export interface LinkedRow {
  parentId: string;
  linkedAt: number;
  row: EntityRow;
}

/** An attribute declared `indexed` (or `unique`, which enforces uniqueness). */
export interface IndexedAttr extends DataAttr {
  entity: string;
  unique: boolean;
}

/** One change an action asked for; all of an execution's changes commit with its final status, or none do. */
export type DataWrite =
  | { op: "insert"; entity: string; id: string; doc: Record<string, unknown>; at: number }
  | { op: "replace"; entity: string; id: string; doc: Record<string, unknown>; at: number }
  | { op: "delete"; entity: string; id: string }
  | {
      op: "link";
      link: string;
      sourceId: string;
      sourceEntity: string;
      targetId: string;
      targetEntity: string;
      at: number;
      /** A has-one end keeps one partner: its earlier link goes. */
      replace: ("source" | "target")[];
    }
  | { op: "unlink"; link: string; sourceId: string; targetId: string }
  /** `ctx.schedule`: a delayed invocation, stored with the execution's (or step's) other writes. */
  | { op: "schedule"; row: ScheduledRow }
  /** `ctx.cancelScheduled`: a pending one of `principal` (any, for a service key) not being started now. */
  | { op: "cancelScheduled"; id: string; principal: { kind: PrincipalKind; id: string } | null; at: number };

/**
 * What one query may still read across all its levels: rows, and bytes of documents as stored. Each read
 * takes from it row by row, as the database hands the rows over.
 */
export interface ReadBudget {
  rows: number;
  bytes: number;
}

/** A read that came to a row its budget could not take: it stopped there, having read no further. */
export class ReadBudgetSpent extends Error {
  override name = "ReadBudgetSpent";
  constructor(readonly spent: "rows" | "bytes") {
    super(`the read went past its budget of ${spent}`);
  }
}

/**
 * The stored entities and links of one environment (test/store/data-store.contract.ts): every statement
 * filters by it, so the same entity id in two environments is two entities. Writes are not here: they commit
 * with an execution's status (`ExecutionSettlement.writes`) or a step's checkpoint (`RunStore.saveStep`).
 */
export interface DataStore {
  /**
   * The top level of a query: its node's own rows (children are read with `selectChildren`), taken from
   * `budget`; throws ReadBudgetSpent at the first row the budget cannot take.
   */
  selectRoots(node: QueryNode, budget: ReadBudget): Promise<EntityRow[]>;
  /**
   * One child level for all `parentIds` at once, in order per parent (a nested limit counts per parent),
   * taken from `budget` as `selectRoots` does.
   */
  selectChildren(child: ChildQuery, parentIds: string[], budget: ReadBudget): Promise<LinkedRow[]>;
  /** One entity's document, or null. */
  readDoc(entity: string, id: string): Promise<Record<string, unknown> | null>;
  countRows(entity: string): Promise<number>;
  /** Creates the index of each attribute when missing; a unique one that stored rows break throws. */
  ensureIndexes(attrs: IndexedAttr[]): Promise<void>;
  /** Stable ids for `entity.label` keys, created on first use and kept across releases. */
  attrIds(keys: string[], now: number): Promise<Map<string, string>>;
  /**
   * Tells other instances sharing this database which entities a commit in this environment touched;
   * `listenChanges` hears theirs in this environment (not this process's own, nor other environments'). PostgreSQL relays over LISTEN/NOTIFY; SQLite has one process, so
   * both do nothing there.
   */
  notifyChange(entities: string[]): Promise<void>;
  listenChanges(listener: (entities: string[]) => void): Promise<void>;
}
