import { type AnyColumn, and, desc, eq, getTableColumns, gte, inArray, lt, type SQL, sql } from "drizzle-orm";
import type { ExecutionFilter, ExecutionListRow } from "../executions.ts";
import { ACTIVE_RUN_STATUSES, type ActiveRunStatus, type RunFilter, type RunListRow } from "../runs.ts";
import type { AnyDatabase, Dialect, Tables } from "./database.ts";

type Listable = Tables["executions"] | Tables["workflowRuns"];

/** Read through their bounds below; `instance` is the executions' bookkeeping (instances.ts), not part of a row. */
const READ_BOUNDED = new Set(["input", "output", "errorMessage", "instance"]);

/**
 * One page of a list, newest first. A value over `maxValueBytes` is never read out of the database
 * (null in the row, its size beside it): one page of large executions or runs stays small.
 */
async function page(
  db: AnyDatabase,
  dialect: Dialect,
  table: Listable,
  conditions: SQL[],
  filter: { beforeId?: string; limit: number; maxValueBytes: number },
) {
  const { input, output, errorMessage } = table;
  const columns = Object.fromEntries(Object.entries(getTableColumns(table)).filter(([key]) => !READ_BOUNDED.has(key)));
  const size = (column: AnyColumn) => sql<number>`coalesce(${dialect.storedBytes(column)}, 0)`.mapWith(Number);
  const bounded = (column: AnyColumn) =>
    sql`case when ${dialect.storedBytes(column)} <= ${filter.maxValueBytes} then ${column} end`.mapWith(column);
  if (filter.beforeId) conditions.push(lt(table.id, filter.beforeId));
  return db
    .select({
      ...columns,
      input: bounded(input),
      output: bounded(output),
      errorMessage: bounded(errorMessage),
      inputBytes: size(input),
      outputBytes: size(output),
      errorMessageBytes: size(errorMessage),
    })
    .from(table)
    .where(and(...conditions))
    .orderBy(desc(table.id))
    .limit(filter.limit);
}

export async function listExecutions(
  db: AnyDatabase,
  dialect: Dialect,
  x: Tables["executions"],
  filter: ExecutionFilter,
): Promise<ExecutionListRow[]> {
  const conditions: SQL[] = [];
  if (filter.principal) {
    conditions.push(eq(x.principalKind, filter.principal.kind), eq(x.principalId, filter.principal.id));
  }
  if (filter.action) conditions.push(eq(x.action, filter.action));
  if (filter.status) conditions.push(eq(x.status, filter.status));
  if (filter.sinceId) conditions.push(gte(x.id, filter.sinceId));
  return (await page(db, dialect, x, conditions, filter)) as ExecutionListRow[];
}

export async function listRuns(
  db: AnyDatabase,
  dialect: Dialect,
  r: Tables["workflowRuns"],
  filter: RunFilter,
): Promise<RunListRow[]> {
  const conditions: SQL[] = [];
  if (filter.principal) {
    conditions.push(eq(r.principalKind, filter.principal.kind), eq(r.principalId, filter.principal.id));
  }
  if (filter.workflow) conditions.push(eq(r.workflow, filter.workflow));
  if (filter.status) conditions.push(eq(r.status, filter.status));
  return (await page(db, dialect, r, conditions, filter)) as RunListRow[];
}

/** Runs that have not ended, by status: one read of the due index (a partial index on exactly these statuses). */
export async function countActiveRuns(
  db: AnyDatabase,
  table: Tables["workflowRuns"],
): Promise<Record<ActiveRunStatus, number>> {
  const rows = await db
    .select({ status: table.status, count: sql<number>`count(*)`.mapWith(Number) })
    .from(table)
    .where(inArray(table.status, [...ACTIVE_RUN_STATUSES]))
    .groupBy(table.status);
  const counts: Record<ActiveRunStatus, number> = { queued: 0, running: 0, sleeping: 0 };
  for (const { status, count } of rows) counts[status as ActiveRunStatus] = count;
  return counts;
}
