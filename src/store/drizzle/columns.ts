import { getTableColumns, type Table } from "drizzle-orm";

/**
 * The select list of a hand-written statement: `alias.column as "key"` for each column of `table`
 * (but `omit`), so raw SQL reads rows in the schema's own shape and no column list is written by hand.
 */
export function selectList(table: Table, alias?: string, omit: readonly string[] = []): string {
  const prefix = alias ? `${alias}.` : "";
  return Object.entries(getTableColumns(table))
    .filter(([key]) => !omit.includes(key))
    .map(([key, column]) => `${prefix}${column.name} as "${key}"`)
    .join(", ");
}
