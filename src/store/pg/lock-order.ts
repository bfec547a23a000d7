import type { ExecutionRow } from "../rows.ts";

/**
 * The one order every PostgreSQL write takes its row locks in, so that no two transactions wait on each
 * other in a circle (docs/decisions/postgres.md, "One lock order"):
 *
 * 1. request keys (`executions_request_uq`, environment first: an insert of a key another transaction is
 *    inserting waits for it), ascending by `requestKey`;
 * 2. runs, ascending by id, each with its own rows (the run, then its steps, then its execution).
 *
 * Both are sorted here in JavaScript, and statements that lock many runs sort by `id collate "C"`: byte
 * order, the same as `byText` for ids, which are ASCII.
 */
export const requestKey = (
  environment: number,
  row: Pick<ExecutionRow, "principalKind" | "principalId" | "requestId">,
) => `${environment}\u0000${row.principalKind}\u0000${row.principalId}\u0000${row.requestId}`;

export const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
