export interface Page<T> {
  items: T[];
  /** The last id of this page when another may follow. */
  lastId: string | null;
}

/** Lists ask for one row more than the page holds: its presence says another page follows. */
export function pageOf<T extends { id: string }>(rows: T[], limit: number): Page<T> {
  const more = rows.length > limit;
  if (more) rows.length = limit;
  return { items: rows, lastId: more ? (rows.at(-1)?.id ?? null) : null };
}
