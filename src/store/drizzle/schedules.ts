import { and, eq, lt, or } from "drizzle-orm";
import type { ScheduleTickRow } from "../rows.ts";
import type { ScheduleStore } from "../schedules.ts";
import type { SharedDatabase, SharedTables } from "./database.ts";

/** One statement per call on both dialects: the upsert's condition decides a claim atomically. */
export class DrizzleScheduleStore implements ScheduleStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Pick<SharedTables, "scheduleTicks">,
  ) {}

  async claim(name: string, owner: string, now: number, leaseUntil: number): Promise<number | null> {
    const s = this.t.scheduleTicks;
    const rows = await this.db
      .insert(s)
      .values({ name, lastTickAt: now, leaseOwner: owner, leaseExpiresAt: leaseUntil })
      .onConflictDoUpdate({
        target: s.name,
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
      .where(and(eq(s.name, name), eq(s.leaseOwner, owner)))
      .returning({ name: s.name });
    return rows.length > 0;
  }

  async release(name: string, owner: string): Promise<void> {
    const s = this.t.scheduleTicks;
    await this.db
      .update(s)
      .set({ leaseOwner: null, leaseExpiresAt: 0 })
      .where(and(eq(s.name, name), eq(s.leaseOwner, owner)));
  }

  list(): Promise<ScheduleTickRow[]> {
    const s = this.t.scheduleTicks;
    return this.db.select().from(s).orderBy(s.name);
  }
}
