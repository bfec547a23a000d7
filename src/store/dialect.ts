import type { SQL, SQLWrapper } from "drizzle-orm";
import type { DataAttr, DataAttrType, IndexedAttr } from "./data.ts";

/**
 * Everything SQLite and PostgreSQL do differently that code written once for both needs: one object per
 * database (sqlite/dialect.ts, pg/dialect.ts), as drizzle's `sqlite-core/dialect.ts` and
 * `pg-core/dialect.ts`. Nothing shared asks which database it is on; it asks its dialect.
 *
 * Most of it is the data compiler's spelling (data-sql.ts, data-write-sql.ts): everything else that
 * compiler writes is plain SQL both accept. Entity, link and attribute names are checked identifiers, so
 * they are written into SQL text; every value is a bound parameter.
 */
export interface Dialect {
  /**
   * The rows of `select` (a subquery of ids) that a claim may take: on PostgreSQL locked, skipping the
   * rows another instance's claim holds, so instances claiming at once take different rows instead of
   * waiting on each other; on SQLite, whose one writer claims alone, the rows themselves.
   */
  claimable(select: SQLWrapper): SQL;

  /** Appends a parameter and returns its placeholder. */
  param(params: unknown[], value: unknown): string;
  /** The attribute's value as a typed scalar (the same expression the attribute's index is built on). */
  attr(alias: string, attr: DataAttr): string;
  /** Membership in a list given as one JSON array parameter (any length, one statement); `type` of the values, text when absent. */
  inJsonList(expr: string, params: unknown[], values: unknown[], type?: DataAttrType): string;
  like(expr: string, params: unknown[], pattern: string, caseInsensitive: boolean): string;
  /** A value bound for comparison with `attr(...)`: booleans differ (SQLite's JSON booleans are 0/1). */
  scalar(attr: DataAttr, value: unknown): unknown;
  /** A document bound as JSON text, as the `doc` column stores it. */
  json(params: unknown[], doc: unknown): string;
  /** The `doc` column of `alias` read as JSON text (what a read budget counts the bytes of). */
  docText(alias: string): string;
  indexDdl(attr: IndexedAttr): string;
  /**
   * What makes the planner read an attribute's index in order for a top-N query, where it would rather
   * sort every row of the entity (SQLite's `indexed by`); empty where the planner needs no help.
   */
  readInOrder(entity: string, attr: DataAttr): string;
}
