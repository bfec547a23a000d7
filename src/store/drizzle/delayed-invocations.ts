import {
  and,
  asc,
  desc,
  eq,
  getTableColumns,
  inArray,
  isNull,
  lt,
  lte,
  min,
  notInArray,
  or,
  type SQL,
  sql,
} from "drizzle-orm";
import type { DelayedInvocationFilter, DelayedInvocationStore } from "../delayed-invocations.ts";
import type { Dialect } from "../dialect.ts";
import type { InEnvironment, ScheduledRow } from "../rows.ts";
import type { PrincipalKind } from "../statuses.ts";
import type { SharedDatabase, SharedTables } from "./database.ts";

const INSERT_CHUNK = 500;

/**
 * An environment's delayed invocations. `markStarted`, `claimDueAcross` and `nextDueAtAcross` are
 * service-wide (one statement for every environment, on the due index), as DelayedInvocationStore says.
 */
export class DrizzleDelayedInvocationStore implements DelayedInvocationStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly dialect: Dialect,
    private readonly t: Pick<SharedTables, "scheduledInvocations">,
    private readonly environment: number,
  ) {}

  async insert(rows: ScheduledRow[]): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      const chunk = rows.slice(i, i + INSERT_CHUNK).map((row) => ({ ...row, environment: this.environment }));
      await this.db.insert(this.t.scheduledInvocations).values(chunk);
    }
  }

  async get(id: string): Promise<ScheduledRow | null> {
    const s = this.t.scheduledInvocations;
    const rows = await this.selectRows().where(this.mine(eq(s.id, id)));
    return rows[0] ?? null;
  }

  list(filter: DelayedInvocationFilter): Promise<ScheduledRow[]> {
    const s = this.t.scheduledInvocations;
    const conditions: SQL[] = [];
    if (filter.principal) conditions.push(...this.owned(filter.principal));
    if (filter.status) conditions.push(eq(s.status, filter.status));
    if (filter.beforeId) conditions.push(lt(s.id, filter.beforeId));
    return this.selectRows()
      .where(this.mine(...conditions))
      .orderBy(desc(s.id))
      .limit(filter.limit);
  }

  claimDue(owner: string, now: number, leaseUntil: number, limit: number): Promise<InEnvironment<ScheduledRow>[]> {
    return this.claimWhere(this.mine(), owner, now, leaseUntil, limit);
  }

  claimDueAcross(
    owner: string,
    now: number,
    leaseUntil: number,
    limit: number,
    skip: readonly number[] = [],
  ): Promise<InEnvironment<ScheduledRow>[]> {
    return this.claimWhere(this.notIn(skip), owner, now, leaseUntil, limit);
  }

  private async claimWhere(
    where: SQL | undefined,
    owner: string,
    now: number,
    leaseUntil: number,
    limit: number,
  ): Promise<InEnvironment<ScheduledRow>[]> {
    const s = this.t.scheduledInvocations;
    const due = this.db
      .select({ id: s.id })
      .from(s)
      .where(and(where, eq(s.status, "pending"), lte(s.dueAt, now), this.free(now)))
      .orderBy(asc(s.dueAt))
      .limit(limit);
    const rows = await this.db
      .update(s)
      .set({ leaseOwner: owner, leaseExpiresAt: leaseUntil, updatedAt: now })
      .where(and(inArray(s.id, this.dialect.claimable(due)), eq(s.status, "pending")))
      .returning();
    return rows.sort((a, b) => a.dueAt - b.dueAt);
  }

  async markStarted(owner: string, started: { id: string; executionId: string }[], now: number): Promise<string[]> {
    if (started.length === 0) return [];
    const s = this.t.scheduledInvocations;
    // One statement for the whole pass: each row's own execution id picked by a CASE on its id.
    const executionIds = sql.join(
      started.map(({ id, executionId }) => sql`when ${id} then ${executionId}`),
      sql` `,
    );
    const rows = await this.db
      .update(s)
      .set({
        status: "started",
        executionId: sql`case ${s.id} ${executionIds} end`,
        leaseOwner: null,
        leaseExpiresAt: null,
        updatedAt: now,
      })
      .where(
        and(
          inArray(
            s.id,
            started.map((r) => r.id),
          ),
          eq(s.leaseOwner, owner),
          eq(s.status, "pending"),
        ),
      )
      .returning({ id: s.id });
    return rows.map((r) => r.id);
  }

  async cancel(id: string, principal: { kind: PrincipalKind; id: string } | null, now: number): Promise<boolean> {
    const s = this.t.scheduledInvocations;
    const rows = await this.db
      .update(s)
      .set({ status: "canceled", updatedAt: now })
      .where(
        this.mine(eq(s.id, id), eq(s.status, "pending"), this.free(now), ...(principal ? this.owned(principal) : [])),
      )
      .returning({ id: s.id });
    return rows.length > 0;
  }

  nextDueAt(): Promise<number | null> {
    return this.nextDueWhere(this.mine());
  }

  nextDueAtAcross(skip: readonly number[] = []): Promise<number | null> {
    return this.nextDueWhere(this.notIn(skip));
  }

  private async nextDueWhere(where: SQL | undefined): Promise<number | null> {
    const s = this.t.scheduledInvocations;
    const rows = await this.db
      .select({ next: min(s.dueAt) })
      .from(s)
      .where(and(where, eq(s.status, "pending")));
    const next = rows[0]?.next;
    return next === null || next === undefined ? null : Number(next);
  }

  /** Rows as this environment's reads answer them: without their `environment`. */
  private selectRows() {
    const { environment: _, ...columns } = getTableColumns(this.t.scheduledInvocations);
    return this.db.select(columns).from(this.t.scheduledInvocations).$dynamic();
  }

  /** `conditions` within this environment's invocations. */
  private mine(...conditions: SQL[]) {
    return and(eq(this.t.scheduledInvocations.environment, this.environment), ...conditions);
  }

  /** Every environment but those in `skip` (none: no condition). */
  private notIn(skip: readonly number[]): SQL | undefined {
    return skip.length === 0 ? undefined : notInArray(this.t.scheduledInvocations.environment, [...skip]);
  }

  private free(now: number) {
    const s = this.t.scheduledInvocations;
    return or(isNull(s.leaseExpiresAt), lt(s.leaseExpiresAt, now)) as SQL;
  }

  private owned(principal: { kind: PrincipalKind; id: string }): SQL[] {
    const s = this.t.scheduledInvocations;
    return [eq(s.principalKind, principal.kind), eq(s.principalId, principal.id)];
  }
}
