import { type AnyColumn, and, asc, desc, eq, getTableColumns, gte, inArray, lt, type SQL, sql } from "drizzle-orm";
import { type ExecutionFilter, type ExecutionListRow, LISTED_VALUES } from "../executions.ts";
import { STORED_SIZES } from "../rows.ts";
import {
  ACTIVE_RUN_STATUSES,
  type ActiveRunStatus,
  BOUNDED_STEP_VALUES,
  type BoundedStep,
  type RunFilter,
  type RunListRow,
  type RunStore,
} from "../runs.ts";
import { type SharedDatabase, type SharedTables, textBytes } from "./database.ts";

type Listable = SharedTables["executions"] | SharedTables["workflowRuns"];

/**
 * Read through their bounds below; `environment` is the store's own (rows.ts), not part of a row; the
 * stored sizes are read as the row's `*Bytes`.
 */
const READ_BOUNDED = new Set([...LISTED_VALUES, "environment", ...STORED_SIZES]);

type Sized = Record<string, { value: AnyColumn; bytes: SQL | AnyColumn }>;

/**
 * The select list of values read in `order` while each, and every one before it, is at most `maxBytes`
 * (null from the first larger one on: the database never reads them), and of their sizes as `<name>Bytes`
 * (0 for none).
 */
function upTo(order: readonly string[], values: Sized, maxBytes: number): Record<string, SQL> {
  const selected: Record<string, SQL> = {};
  const fit: SQL[] = [];
  for (const name of order) {
    const { value, bytes } = values[name] as Sized[string];
    fit.push(sql`coalesce(${bytes}, 0) <= ${maxBytes}`);
    selected[name] = sql`case when ${sql.join(fit, sql` and `)} then ${value} end`.mapWith(value);
    selected[`${name}Bytes`] = sql<number>`coalesce(${bytes}, 0)`.mapWith(Number);
  }
  return selected;
}

/**
 * Rows of executions or runs with their values bounded (LISTED_VALUES). The sizes are those stored when
 * the values were written (a JSON value's) or read from a value's header (a text's), so a page of large
 * executions or runs reads no value it leaves out.
 */
function bounded(db: SharedDatabase, table: Listable, maxValueBytes: number) {
  const { input, output, errorMessage, inputBytes, outputBytes } = table;
  const columns = Object.fromEntries(Object.entries(getTableColumns(table)).filter(([key]) => !READ_BOUNDED.has(key)));
  const values: Sized = {
    errorMessage: { value: errorMessage, bytes: textBytes(errorMessage) },
    output: { value: output, bytes: outputBytes },
    input: { value: input, bytes: inputBytes },
  };
  return db.select({ ...columns, ...upTo(LISTED_VALUES, values, maxValueBytes) }).from(table);
}

/** One page of a list, newest first, its values bounded. */
function page(
  db: SharedDatabase,
  table: Listable,
  conditions: SQL[],
  filter: { beforeId?: string; limit: number; maxValueBytes: number },
) {
  if (filter.beforeId) conditions.push(lt(table.id, filter.beforeId));
  return bounded(db, table, filter.maxValueBytes)
    .where(and(...conditions))
    .orderBy(desc(table.id))
    .limit(filter.limit);
}

/** One environment's executions: a caller's through executions_principal_id_idx, all of them through the id range. */
export async function listExecutions(
  db: SharedDatabase,
  x: SharedTables["executions"],
  environment: number,
  filter: ExecutionFilter,
): Promise<ExecutionListRow[]> {
  const conditions: SQL[] = [eq(x.environment, environment)];
  if (filter.principal) {
    conditions.push(eq(x.principalKind, filter.principal.kind), eq(x.principalId, filter.principal.id));
  }
  if (filter.action) conditions.push(eq(x.action, filter.action));
  if (filter.status) conditions.push(eq(x.status, filter.status));
  if (filter.sinceId) conditions.push(gte(x.id, filter.sinceId));
  return (await page(db, x, conditions, filter)) as ExecutionListRow[];
}

/**
 * The reads of one environment's runs, the same on both dialects: each dialect's run store extends this
 * with its writes (sqlite/runs.ts, pg/runs.ts).
 */
export abstract class DrizzleRunReads
  implements
    Pick<RunStore, "list" | "countActive" | "countActiveAcross" | "getBounded" | "getManyBounded" | "boundedSteps">
{
  constructor(
    protected readonly lists: { db: SharedDatabase; tables: SharedTables },
    protected readonly environment: number,
  ) {}

  async list(filter: RunFilter): Promise<RunListRow[]> {
    const r = this.lists.tables.workflowRuns;
    const conditions: SQL[] = [eq(r.environment, this.environment)];
    if (filter.principal) {
      conditions.push(eq(r.principalKind, filter.principal.kind), eq(r.principalId, filter.principal.id));
    }
    if (filter.workflow) conditions.push(eq(r.workflow, filter.workflow));
    if (filter.status) conditions.push(eq(r.status, filter.status));
    return (await page(this.lists.db, r, conditions, filter)) as RunListRow[];
  }

  /** Runs that have not ended, by status: one read of the due index (a partial index on exactly these statuses). */
  countActive(): Promise<Record<ActiveRunStatus, number>> {
    return this.countActiveWhere(eq(this.lists.tables.workflowRuns.environment, this.environment));
  }

  countActiveAcross(): Promise<Record<ActiveRunStatus, number>> {
    return this.countActiveWhere(undefined);
  }

  private async countActiveWhere(environment: SQL | undefined): Promise<Record<ActiveRunStatus, number>> {
    const r = this.lists.tables.workflowRuns;
    const rows = await this.lists.db
      .select({ status: r.status, count: sql<number>`count(*)`.mapWith(Number) })
      .from(r)
      .where(and(environment, inArray(r.status, [...ACTIVE_RUN_STATUSES])))
      .groupBy(r.status);
    const counts: Record<ActiveRunStatus, number> = { queued: 0, running: 0, sleeping: 0 };
    for (const { status, count } of rows) counts[status as ActiveRunStatus] = count;
    return counts;
  }

  async getBounded(id: string, maxValueBytes: number): Promise<RunListRow | null> {
    const r = this.lists.tables.workflowRuns;
    const [row] = await bounded(this.lists.db, r, maxValueBytes).where(
      and(eq(r.id, id), eq(r.environment, this.environment)),
    );
    return (row as RunListRow | undefined) ?? null;
  }

  async getManyBounded(ids: string[], maxValueBytes: number): Promise<RunListRow[]> {
    if (ids.length === 0) return [];
    const r = this.lists.tables.workflowRuns;
    const rows = await bounded(this.lists.db, r, maxValueBytes).where(
      and(inArray(r.id, ids), eq(r.environment, this.environment)),
    );
    return rows as RunListRow[];
  }

  async boundedSteps(runId: string, maxValueBytes: number): Promise<BoundedStep[]> {
    const s = this.lists.tables.workflowSteps;
    const { output, outputBytes, error } = s;
    const { output: _, outputBytes: __, error: ___, environment: ____, ...columns } = getTableColumns(s);
    const values: Sized = {
      output: { value: output, bytes: outputBytes },
      error: { value: error, bytes: textBytes(error) },
    };
    const rows = await this.lists.db
      .select({ ...columns, ...upTo(BOUNDED_STEP_VALUES, values, maxValueBytes) })
      .from(s)
      .where(and(eq(s.environment, this.environment), eq(s.runId, runId)))
      .orderBy(asc(s.seq));
    return rows as BoundedStep[];
  }
}
