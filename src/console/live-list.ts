import type { Page } from "../wire/views.ts";

/** A row of a live list: the executions' or the runs'. */
export type Row = { id: string; createdAt: string };

/** Rows a live list shows at least (the pages read 50). */
const SHOWN = 50;

const within = (row: Row, filters: Record<string, string | undefined>) =>
  (!filters.since || row.createdAt >= new Date(filters.since).toISOString()) &&
  (!filters.until || row.createdAt < new Date(filters.until).toISOString());

/** What a live list was pushed that its page does not show yet: changed and new rows, newest push first, and rows gone. */
export interface Pushes<T extends Row> {
  rows: T[];
  /** Rows that left the list (a status the filter leaves out). */
  left: Set<string>;
}

/**
 * The pushes with one more applied. Once the page is read, only what can still show is kept (its own
 * rows' latest states, the newest SHOWN new rows, its rows gone): a list left open for days keeps no more.
 */
export function withPush<T extends Row>(
  pushes: Pushes<T>,
  items: T[],
  gone: string[],
  page: Page<T> | undefined,
  filters: Record<string, string | undefined>,
): Pushes<T> {
  const changed = new Set([...items.map((row) => row.id), ...gone]);
  const rows = [...items, ...pushes.rows.filter((row) => !changed.has(row.id))];
  const left = new Set([...pushes.left, ...gone]);
  for (const row of items) left.delete(row.id);
  if (!page) return { rows, left };
  const onPage = new Set(page.items.map((row) => row.id));
  let added = 0;
  return {
    rows: rows.filter((row) => onPage.has(row.id) || (within(row, filters) && added++ < SHOWN)),
    left: new Set([...left].filter((id) => onPage.has(id))),
  };
}

/**
 * Changed rows replace theirs where they are; rows the page lacks go on top (newest first), when they fit
 * the page; rows that left the list go.
 */
export function merged<T extends Row>(
  page: Page<T>,
  pushes: Pushes<T>,
  filters: Record<string, string | undefined>,
): Page<T> {
  const byId = new Map(pushes.rows.map((row) => [row.id, row]));
  const items = page.items.filter((row) => !pushes.left.has(row.id)).map((row) => byId.get(row.id) ?? row);
  const listed = new Set(items.map((row) => row.id));
  const added = pushes.rows.filter((row) => !listed.has(row.id) && within(row, filters));
  // A list left open keeps its length: the oldest rows make room for the new.
  return { ...page, items: [...added, ...items].slice(0, Math.max(page.items.length, SHOWN)) };
}
