import { and, eq, isNull } from "drizzle-orm";
import type { TokenRow } from "../rows.ts";
import type { TokenStore } from "../tokens.ts";
import type { AnyDatabase, Tables } from "./database.ts";

export class DrizzleTokenStore implements TokenStore {
  constructor(
    private readonly db: AnyDatabase,
    private readonly t: Pick<Tables, "apiTokens">,
  ) {}

  async insert(row: TokenRow): Promise<void> {
    await this.db.insert(this.t.apiTokens).values(row);
  }

  async findByHash(tokenHash: string): Promise<TokenRow | null> {
    const rows = await this.db.select().from(this.t.apiTokens).where(eq(this.t.apiTokens.tokenHash, tokenHash));
    return rows[0] ?? null;
  }

  findByPrefix(prefix: string): Promise<TokenRow[]> {
    return this.db.select().from(this.t.apiTokens).where(eq(this.t.apiTokens.prefix, prefix));
  }

  list(): Promise<Omit<TokenRow, "tokenHash">[]> {
    const { id, prefix, userId, createdAt, revokedAt } = this.t.apiTokens;
    return this.db.select({ id, prefix, userId, createdAt, revokedAt }).from(this.t.apiTokens).orderBy(createdAt, id);
  }

  async revoke(id: string, at: number): Promise<void> {
    await this.db.update(this.t.apiTokens).set({ revokedAt: at }).where(eq(this.t.apiTokens.id, id));
  }

  async revokeAllOf(userId: string, at: number): Promise<number> {
    const t = this.t.apiTokens;
    const revoked = await this.db
      .update(t)
      .set({ revokedAt: at })
      .where(and(eq(t.userId, userId), isNull(t.revokedAt)))
      .returning({ id: t.id });
    return revoked.length;
  }
}
