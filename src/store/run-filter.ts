import type { RunFilter } from "./types.ts";

/**
 * The where-clause of a run list, the same on both dialects but for how a parameter is written:
 * `placeholder(name, position)` answers `$name` (SQLite) or `$1` (PostgreSQL).
 */
export function listConditions(filter: RunFilter, placeholder: (name: string, position: number) => string) {
  const params: [string, unknown][] = [];
  const conditions: string[] = [];
  const bind = (column: string, name: string, value: unknown, operator = "=") => {
    params.push([name, value]);
    conditions.push(`${column} ${operator} ${placeholder(name, params.length)}`);
  };
  if (filter.principal) {
    bind("principal_kind", "principalKind", filter.principal.kind);
    bind("principal_id", "principalId", filter.principal.id);
  }
  if (filter.workflow) bind("workflow", "workflow", filter.workflow);
  if (filter.status) bind("status", "status", filter.status);
  if (filter.beforeId) bind("id", "beforeId", filter.beforeId, "<");
  return { where: conditions.length > 0 ? `where ${conditions.join(" and ")}` : "", params };
}
