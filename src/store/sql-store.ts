import { hostname } from "node:os";
import { type AnyColumn, and, desc, eq, getTableColumns, inArray, lt, type SQL, sql } from "drizzle-orm";
import type { PgDatabase } from "drizzle-orm/pg-core";
import type postgres from "postgres";
import type { ParameterOrJSON } from "postgres";
import type { DataStore } from "./data.ts";
import { applyDataWrites } from "./pg/data-writes.ts";
import type * as tables from "./pg/schema.ts";
import type {
  ActiveRelease,
  ExecutionFilter,
  ExecutionListRow,
  ExecutionRow,
  ExecutionSettlement,
  FileRow,
  PrincipalKind,
  ReleaseRow,
  ReleaseSummary,
  RunStore,
  Store,
  TokenRow,
} from "./types.ts";
import { failedWrites, writeFailure } from "./write-failure.ts";

// biome-ignore lint/suspicious/noExplicitAny: the result HKT and schema differ per driver; the builder API does not.
export type AnyDatabase = PgDatabase<any, any>;
export type Tables = typeof tables;

/**
 * The repository, written once. drizzle's sqlite-core and pg-core builders read the same for every
 * query used here, and both schemas have the same names and row shapes, so the SQLite side is typed
 * through the PostgreSQL one (see sqlite/open.ts).
 */
/** Notified by a trigger on `executions` (drizzle/pg/0007_execution_changes.sql): ids, comma-separated. */
const EXECUTION_CHANNEL = "actuate_execution_changes";

export abstract class SqlStore implements Store {
  abstract readonly runs: RunStore;
  abstract readonly data: DataStore;
  /**
   * This process among the instances sharing the database: the owner of its workflow leases, the
   * instance of its executions, the origin of its notifications. Host and pid make it readable in rows.
   */
  readonly instance = `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`;

  constructor(
    readonly dialect: "sqlite" | "postgres",
    private readonly db: AnyDatabase,
    private readonly t: Tables,
    private readonly onClose: () => Promise<void>,
  ) {}

  async insertRelease(row: ReleaseRow): Promise<void> {
    await this.db.insert(this.t.releases).values(row);
  }

  async getRelease(version: string): Promise<ReleaseRow | null> {
    const rows = await this.db.select().from(this.t.releases).where(eq(this.t.releases.version, version));
    return rows[0] ?? null;
  }

  async listReleases(): Promise<ReleaseSummary[]> {
    const r = this.t.releases;
    return this.db
      .select({ version: r.version, bundleHash: r.bundleHash, manifest: r.manifest, createdAt: r.createdAt })
      .from(r)
      .orderBy(r.createdAt, r.version);
  }

  async getActive(): Promise<ActiveRelease> {
    const e = this.t.environment;
    const rows = await this.db
      .select({ version: e.activeVersion, revision: e.revision, activatedAt: e.updatedAt })
      .from(e)
      .where(eq(e.id, 1));
    return rows[0] ?? { version: null, revision: 0, activatedAt: null };
  }

  async activate(version: string, at: number): Promise<number> {
    const e = this.t.environment;
    const rows = await this.db
      .insert(e)
      .values({ id: 1, activeVersion: version, revision: 1, updatedAt: at })
      .onConflictDoUpdate({
        target: e.id,
        set: { activeVersion: version, revision: sqlIncrement(e.revision), updatedAt: at },
      })
      .returning({ revision: e.revision });
    return rows[0]?.revision ?? 0;
  }

  async claimExecution(row: ExecutionRow): Promise<{ row: ExecutionRow; created: boolean }> {
    const x = this.t.executions;
    const inserted = await this.db
      .insert(x)
      .values(row)
      .onConflictDoNothing({ target: [x.principalKind, x.principalId, x.requestId] })
      .returning({ id: x.id });
    if (inserted.length > 0) return { row, created: true };
    const existing = await this.findExecutionByRequest({ kind: row.principalKind, id: row.principalId }, row.requestId);
    if (!existing) throw new Error(`execution for request ${row.requestId} vanished after a conflicting insert`);
    return { row: existing, created: false };
  }

  async getExecution(id: string): Promise<ExecutionRow | null> {
    const rows = await this.db.select().from(this.t.executions).where(eq(this.t.executions.id, id));
    return (rows[0] as ExecutionRow | undefined) ?? null;
  }

  async findExecutionByRequest(principal: { kind: PrincipalKind; id: string }, requestId: string) {
    const x = this.t.executions;
    const rows = await this.db
      .select()
      .from(x)
      .where(and(eq(x.principalKind, principal.kind), eq(x.principalId, principal.id), eq(x.requestId, requestId)));
    return (rows[0] as ExecutionRow | undefined) ?? null;
  }

  async listExecutions(filter: ExecutionFilter): Promise<ExecutionListRow[]> {
    const x = this.t.executions;
    const { input, output, errorMessage, instance: _, ...columns } = getTableColumns(x);
    const inputBytes = this.storedBytes(input);
    const outputBytes = sql<number>`coalesce(${this.storedBytes(output)}, 0)`.mapWith(Number);
    const errorMessageBytes = sql<number>`coalesce(${this.storedBytes(errorMessage)}, 0)`.mapWith(Number);
    // A value over the bound is never read out of the database: one page of large executions stays small.
    const bounded = (column: AnyColumn, bytes: SQL) =>
      sql`case when ${bytes} <= ${filter.maxValueBytes} then ${column} end`.mapWith(column);
    const conditions: SQL[] = [];
    if (filter.principal) {
      conditions.push(eq(x.principalKind, filter.principal.kind), eq(x.principalId, filter.principal.id));
    }
    if (filter.action) conditions.push(eq(x.action, filter.action));
    if (filter.status) conditions.push(eq(x.status, filter.status));
    if (filter.beforeId) conditions.push(lt(x.id, filter.beforeId));
    const rows = await this.db
      .select({
        ...columns,
        input: bounded(input, inputBytes),
        output: bounded(output, outputBytes),
        errorMessage: bounded(errorMessage, errorMessageBytes),
        inputBytes: inputBytes.mapWith(Number),
        outputBytes,
        errorMessageBytes,
      })
      .from(x)
      .where(and(...conditions))
      .orderBy(desc(x.id))
      .limit(filter.limit);
    return rows as ExecutionListRow[];
  }

  /** The size of a text or JSON column as stored (PostgreSQL's jsonb sized as its text). */
  private storedBytes(column: AnyColumn): SQL<number> {
    return this.dialect === "postgres"
      ? sql<number>`octet_length(${column}::text)`
      : sql<number>`length(cast(${column} as blob))`;
  }

  async settleExecution(id: string, s: ExecutionSettlement): Promise<ExecutionSettlement> {
    if (s.writes?.length) return this.settleWithWrites(id, s);
    const updated = await this.db
      .update(this.t.executions)
      .set({
        status: s.status,
        output: s.output,
        errorCode: s.errorCode,
        errorMessage: s.errorMessage,
        finishedAt: s.finishedAt,
      })
      .where(eq(this.t.executions.id, id))
      .returning({ id: this.t.executions.id });
    if (updated.length === 0) throw new Error(`execution ${id} is not stored`);
    return s;
  }

  /** PostgreSQL: the writes and the final status in one transaction; a refused write fails the execution instead. */
  private async settleWithWrites(id: string, s: ExecutionSettlement): Promise<ExecutionSettlement> {
    const { writes = [], ...settlement } = s;
    try {
      await this.postgresClient().begin(async (tx) => {
        await applyDataWrites(tx, writes);
        const updated = await tx.unsafe(
          `update executions set status = $1, output = $2::text::jsonb, error_code = $3, error_message = $4, finished_at = $5 where id = $6`,
          [
            s.status,
            JSON.stringify(s.output),
            s.errorCode,
            s.errorMessage,
            s.finishedAt,
            id,
          ] as ParameterOrJSON<never>[],
        );
        if (updated.count === 0) throw new Error(`execution ${id} is not stored`);
      });
      return settlement;
    } catch (error) {
      const reason = writeFailure(error);
      if (reason === null) throw error;
      return this.settleExecution(id, failedWrites(settlement, reason));
    }
  }

  async failInterrupted(_at: number): Promise<number> {
    return 0;
  }

  async keepAlive(_now: number, _expiresAt: number): Promise<number> {
    return 0;
  }

  async retire(): Promise<void> {}

  async ping(): Promise<void> {
    await this.db.select({ ok: sql`1` }).from(this.t.environment).limit(1);
  }

  async listenExecutionChanges(listener: (ids: string[]) => void): Promise<void> {
    if (this.dialect !== "postgres") return;
    await this.postgresClient().listen(EXECUTION_CHANNEL, (payload) => listener(payload.split(",")));
  }

  private postgresClient(): postgres.Sql {
    return (this.db as unknown as { $client: postgres.Sql }).$client;
  }

  async getFile(path: string): Promise<FileRow | null> {
    const rows = await this.db.select().from(this.t.files).where(eq(this.t.files.path, path));
    return (rows[0] as FileRow | undefined) ?? null;
  }

  async putFile(row: FileRow): Promise<void> {
    const f = this.t.files;
    const { createdAt: _, path: __, ...changes } = row;
    await this.db.insert(f).values(row).onConflictDoUpdate({ target: f.path, set: changes });
  }

  async uploadsOf(executionIds: string[]): Promise<FileRow[]> {
    if (executionIds.length === 0) return [];
    const f = this.t.files;
    return (await this.db.select().from(f).where(inArray(f.executionId, executionIds)).orderBy(f.field)) as FileRow[];
  }

  async deleteFile(path: string): Promise<void> {
    await this.db.delete(this.t.files).where(eq(this.t.files.path, path));
  }

  async insertToken(row: TokenRow): Promise<void> {
    await this.db.insert(this.t.apiTokens).values(row);
  }

  async findToken(tokenHash: string): Promise<TokenRow | null> {
    const rows = await this.db.select().from(this.t.apiTokens).where(eq(this.t.apiTokens.tokenHash, tokenHash));
    return rows[0] ?? null;
  }

  async findTokensByPrefix(prefix: string): Promise<TokenRow[]> {
    return this.db.select().from(this.t.apiTokens).where(eq(this.t.apiTokens.prefix, prefix));
  }

  async listTokens(): Promise<Omit<TokenRow, "tokenHash">[]> {
    const { id, prefix, userId, createdAt, revokedAt } = this.t.apiTokens;
    return this.db.select({ id, prefix, userId, createdAt, revokedAt }).from(this.t.apiTokens).orderBy(createdAt, id);
  }

  async revokeToken(id: string, at: number): Promise<void> {
    await this.db.update(this.t.apiTokens).set({ revokedAt: at }).where(eq(this.t.apiTokens.id, id));
  }

  close(): Promise<void> {
    return this.onClose();
  }
}

/** The error message of an execution whose server process stopped while it ran. */
export const INTERRUPTED = "the server stopped while this execution ran; it did not finish";

const sqlIncrement = (column: Tables["environment"]["revision"]) => sql`${column} + 1`;
