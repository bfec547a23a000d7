// No preact and no DOM here: test/unit/console-form.test.ts runs it under Bun.

export interface BrowseSettings {
  /** A where clause as JSON text; empty for every row. */
  where: string;
  /** An attribute, or "" for creation order. */
  orderBy: string;
  direction: "asc" | "desc";
  limit: number;
}

/** The InstaQL query of one page of an entity's table (the server applies the caller's view rules). */
export function browseQuery(entity: string, settings: BrowseSettings): Record<string, unknown> {
  const $: Record<string, unknown> = { limit: settings.limit };
  const where = settings.where.trim();
  if (where !== "") {
    const parsed: unknown = JSON.parse(where);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      throw new SyntaxError('where must be a JSON object, e.g. {"done": false}');
    $.where = parsed;
  }
  if (settings.orderBy !== "") $.order = { [settings.orderBy]: settings.direction };
  return { [entity]: { $ } };
}

/** A playground text as a query: a JSON object whose keys are entities. */
export function parseQuery(text: string): Record<string, unknown> {
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new SyntaxError('a query is a JSON object, e.g. {"notes": {"$": {"limit": 10}}}');
  return parsed as Record<string, unknown>;
}

/** A cell of the table: strings as they are, anything else as JSON, absent as empty. */
export const cellText = (value: unknown): string =>
  value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value);
