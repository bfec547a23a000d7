import { and, eq, isNotNull, isNull } from "drizzle-orm";
import type { UserRow } from "../rows.ts";
import type { UserStore } from "../users.ts";
import type { SharedDatabase, SharedTables } from "./database.ts";

export class DrizzleUserStore implements UserStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Pick<SharedTables, "users">,
  ) {}

  async insert(row: UserRow): Promise<boolean> {
    const added = await this.db
      .insert(this.t.users)
      .values(row)
      .onConflictDoNothing({ target: this.t.users.id })
      .returning({ id: this.t.users.id });
    return added.length > 0;
  }

  async get(id: string): Promise<UserRow | null> {
    const rows = await this.db.select().from(this.t.users).where(eq(this.t.users.id, id));
    return rows[0] ?? null;
  }

  list(): Promise<Omit<UserRow, "passwordHash">[]> {
    const { id, createdAt, disabledAt } = this.t.users;
    return this.db.select({ id, createdAt, disabledAt }).from(this.t.users).orderBy(createdAt, id);
  }

  async disable(id: string, at: number): Promise<boolean> {
    const u = this.t.users;
    await this.db
      .update(u)
      .set({ disabledAt: at })
      .where(and(eq(u.id, id), isNull(u.disabledAt)));
    return (await this.get(id)) !== null;
  }

  async enable(id: string): Promise<boolean> {
    const u = this.t.users;
    const enabled = await this.db
      .update(u)
      .set({ disabledAt: null })
      .where(and(eq(u.id, id), isNotNull(u.disabledAt)))
      .returning({ id: u.id });
    return enabled.length > 0;
  }
}
