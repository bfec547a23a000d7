import { and, asc, eq, getTableColumns, inArray, isNotNull, lt, lte, min, notInArray, or, type SQL } from "drizzle-orm";
import type { ScheduleTickRow } from "../rows.ts";
import type { ScheduleStore } from "../schedules.ts";
import type { SharedDatabase, SharedTables } from "./database.ts";

/** One statement per call on both dialects: the upsert's condition decides a claim atomically. */
export class DrizzleScheduleStore implements ScheduleStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Pick<SharedTables, "scheduleTicks" | "environments">,
    private readonly environment: number,
  ) {}

  async claim(name: string, owner: string, now: number, leaseUntil: number): Promise<number | null> {
    const s = this.t.scheduleTicks;
    const rows = await this.db
      .insert(s)
      .values({ environment: this.environment, name, lastTickAt: now, leaseOwner: owner, leaseExpiresAt: leaseUntil })
      .onConflictDoUpdate({
        target: [s.environment, s.name],
        set: { leaseOwner: owner, leaseExpiresAt: leaseUntil },
        setWhere: or(lt(s.leaseExpiresAt, now), eq(s.leaseOwner, owner)),
      })
      .returning({ lastTickAt: s.lastTickAt });
    return rows[0]?.lastTickAt ?? null;
  }

  async advance(name: string, owner: string, tickAt: number): Promise<boolean> {
    const s = this.t.scheduleTicks;
    const rows = await this.db
      .update(s)
      .set({ lastTickAt: tickAt })
      .where(this.mine(eq(s.name, name), eq(s.leaseOwner, owner)))
      .returning({ name: s.name });
    return rows.length > 0;
  }

  async release(name: string, owner: string): Promise<void> {
    const s = this.t.scheduleTicks;
    await this.db
      .update(s)
      .set({ leaseOwner: null, leaseExpiresAt: 0 })
      .where(this.mine(eq(s.name, name), eq(s.leaseOwner, owner)));
  }

  list(): Promise<ScheduleTickRow[]> {
    const s = this.t.scheduleTicks;
    const { environment: _, ...columns } = getTableColumns(s);
    return this.db.select(columns).from(s).where(this.mine()).orderBy(s.name);
  }

  async setNextTick(at: number | null): Promise<void> {
    const e = this.t.environments;
    await this.db.update(e).set({ nextTickAt: at }).where(eq(e.id, this.environment));
  }

  async claimDueEnvironments(now: number, leaseUntil: number, limit: number, skip: readonly number[] = []) {
    const e = this.t.environments;
    const due = this.db
      .select({ id: e.id })
      .from(e)
      .where(and(lte(e.nextTickAt, now), eq(e.schedulesPaused, false), this.notIn(skip)))
      .orderBy(asc(e.nextTickAt))
      .limit(limit);
    // The condition again in the update: an instance that took the row meanwhile moved it past `now`.
    const rows = await this.db
      .update(e)
      .set({ nextTickAt: leaseUntil })
      .where(and(inArray(e.id, due), lte(e.nextTickAt, now)))
      .returning({ id: e.id });
    return rows.map((row) => row.id);
  }

  async nextTickAt(skip: readonly number[] = []): Promise<number | null> {
    const e = this.t.environments;
    const rows = await this.db
      .select({ next: min(e.nextTickAt) })
      .from(e)
      .where(and(isNotNull(e.nextTickAt), eq(e.schedulesPaused, false), this.notIn(skip)));
    const next = rows[0]?.next;
    return next === null || next === undefined ? null : Number(next);
  }

  private notIn(skip: readonly number[]): SQL | undefined {
    return skip.length === 0 ? undefined : notInArray(this.t.environments.id, [...skip]);
  }

  /** `conditions` within this environment's schedules. */
  private mine(...conditions: SQL[]) {
    return and(eq(this.t.scheduleTicks.environment, this.environment), ...conditions);
  }
}
