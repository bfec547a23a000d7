import { invalidRequest } from "../errors.ts";

/** A page request of the control API: `?limit` rows after the cursor's key. */
export interface ControlPage {
  limit: number;
  cursor?: string;
}

/**
 * One page of a list the control store answers whole (organizations, environments, keys, grants: what
 * one operator or organization holds, not what its environments hold), sorted by `keyOf` here so the
 * order does not depend on a database's collation. The cursor is the last key of the page, opaque.
 */
export function pageAfter<Row, View>(
  rows: Row[],
  keyOf: (row: Row) => string,
  page: ControlPage,
  view: (row: Row) => View,
): { items: View[]; next: string | null } {
  const after = page.cursor === undefined ? undefined : decodeKey(page.cursor);
  const sorted = rows
    .map((row) => [keyOf(row), row] as const)
    .filter(([key]) => after === undefined || key > after)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const taken = sorted.slice(0, page.limit);
  const last = taken.at(-1);
  return {
    items: taken.map(([, row]) => view(row)),
    next: sorted.length > page.limit && last ? Buffer.from(`k:${last[0]}`).toString("base64url") : null,
  };
}

function decodeKey(cursor: string): string {
  const text = Buffer.from(cursor, "base64url").toString();
  if (!text.startsWith("k:")) {
    throw invalidRequest([
      { where: "/query/cursor", code: "invalid", message: "cursor is not one this server gave out" },
    ]);
  }
  return text.slice(2);
}
