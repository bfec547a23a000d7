import type { AnyDatabase, Tables } from "./database.ts";

/** Stable ids for `entity.label` keys, created on first use and kept across releases. */
export async function attrIds(
  db: AnyDatabase,
  t: Pick<Tables, "dataAttrs">,
  keys: string[],
  now: number,
): Promise<Map<string, string>> {
  const a = t.dataAttrs;
  const rows = keys.map((key) => {
    const [entity = "", label = ""] = key.split(".");
    return { id: crypto.randomUUID(), entity, label, createdAt: now };
  });
  if (rows.length > 0)
    await db
      .insert(a)
      .values(rows)
      .onConflictDoNothing({ target: [a.entity, a.label] });
  const stored = await db.select().from(a);
  return new Map(stored.map((r) => [`${r.entity}.${r.label}`, r.id]));
}
