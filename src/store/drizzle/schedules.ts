import { and, eq, getTableColumns, lt, or, type SQL } from "drizzle-orm";
import type { ScheduleTickRow } from "../rows.ts";
import type { ScheduleStore } from "../schedules.ts";
import type { SharedDatabase, SharedTables } from "./database.ts";

/** One statement per call on both dialects: the upsert's condition decides a claim atomically. */
export class DrizzleScheduleStore implements ScheduleStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Pick<SharedTables, "scheduleTicks">,
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

  /** `conditions` within this environment's schedules. */
  private mine(...conditions: SQL[]) {
    return and(eq(this.t.scheduleTicks.environment, this.environment), ...conditions);
  }
}
