import { type AnyColumn, type SQL, sql } from "drizzle-orm";
import type { PgDatabase } from "drizzle-orm/pg-core";
import type * as tables from "../schema/pg.ts";

/**
 * A drizzle database of either dialect, typed as PostgreSQL's. drizzle's sqlite-core and pg-core
 * builders read the same for every query written in drizzle/, and both schemas have the same names and
 * row shapes (rows.ts checks that), so the SQLite side is typed through the PostgreSQL one.
 */
// biome-ignore lint/suspicious/noExplicitAny: the result HKT and schema differ per driver; the builder API does not.
export type AnyDatabase = PgDatabase<any, any>;
export type Tables = typeof tables;

/**
 * A text column's size in UTF-8 bytes. Both databases read it from the value's header, not the value
 * (measured: 400 MiB of values sized in under 10 ms on either); a JSON value's size is stored beside it
 * (rows.ts `STORED_SIZES`), since PostgreSQL would have to print a jsonb to size it.
 */
export const textBytes = (column: AnyColumn): SQL<number> => sql<number>`octet_length(${column})`;
