import { type AnyColumn, type SQL, sql } from "drizzle-orm";
import type { PgDatabase } from "drizzle-orm/pg-core";
import type * as pgTables from "../schema/pg.ts";

/**
 * Filled in only by the check that compiles drizzle/ a second time, against sqlite-core's builders
 * (test/store/drizzle-types.test.ts). Empty, as here, drizzle/ is compiled against pg-core's.
 */
// biome-ignore lint/suspicious/noEmptyInterface: augmented by that check.
export interface BuildersUnderCheck {}

/**
 * The database as drizzle/ writes its queries, once for both dialects. drizzle types each dialect's
 * builders apart, with no type both satisfy, so drizzle/ is compiled against each in turn: a builder
 * call one dialect lacks (PostgreSQL's `.for()`, a prepared statement's name) fails one of the two.
 * What differs goes through the dialect object (store/dialect.ts). Each database is typed as what it
 * is (sqlite/open.ts, pg/open.ts); SQLite's is seen through this type in one place, sqlite/open.ts.
 */
export type SharedDatabase = BuildersUnderCheck extends { database: infer D }
  ? D
  : // biome-ignore lint/suspicious/noExplicitAny: the result HKT and schema differ per driver; the builder API does not.
    PgDatabase<any, any>;
/** Both schemas have the same names and row shapes (rows.ts checks that). */
export type SharedTables = BuildersUnderCheck extends { tables: infer T } ? T : typeof pgTables;

/**
 * A text column's size in UTF-8 bytes. Both databases read it from the value's header, not the value
 * (measured: 400 MiB of values sized in under 10 ms on either); a JSON value's size is stored beside it
 * (rows.ts `STORED_SIZES`), since PostgreSQL would have to print a jsonb to size it.
 */
export const textBytes = (column: AnyColumn): SQL<number> => sql<number>`octet_length(${column})`;

/**
 * A query prepared once. PostgreSQL names its prepared statements; SQLite's `prepare()` takes no name
 * (the statement object is its handle), so the name given it is not read.
 */
export const prepared = <P>(query: { prepare(name: string): P }, name: string): P => query.prepare(name);
