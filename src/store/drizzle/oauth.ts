import { and, eq, gt, gte, inArray, isNotNull, isNull, lte, max, or, type SQL, sql } from "drizzle-orm";
import type { OAuthStore } from "../oauth.ts";
import type { OAuthRecord } from "../rows.ts";
import type { SharedDatabase, SharedTables } from "./database.ts";

export class DrizzleOAuthStore implements OAuthStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Pick<SharedTables, "oauthRecords">,
  ) {}

  async upsert(record: OAuthRecord): Promise<void> {
    const r = this.t.oauthRecords;
    const { model: _, id: __, ...changes } = record;
    await this.db
      .insert(r)
      .values(record)
      .onConflictDoUpdate({ target: [r.model, r.id], set: changes });
  }

  find(model: string, id: string, now: number) {
    return this.first(eq(this.t.oauthRecords.id, id), model, now);
  }

  async findMany(model: string, ids: string[], now: number): Promise<OAuthRecord[]> {
    if (ids.length === 0) return [];
    const r = this.t.oauthRecords;
    return this.db
      .select()
      .from(r)
      .where(and(eq(r.model, model), inArray(r.id, ids), or(isNull(r.expiresAt), gt(r.expiresAt, now))));
  }

  findByUid(model: string, uid: string, now: number) {
    return this.first(eq(this.t.oauthRecords.uid, uid), model, now);
  }

  findByUserCode(model: string, userCode: string, now: number) {
    return this.first(eq(this.t.oauthRecords.userCode, userCode), model, now);
  }

  async consume(model: string, id: string, at: number): Promise<void> {
    const r = this.t.oauthRecords;
    await this.db
      .update(r)
      .set({ consumedAt: at })
      .where(and(eq(r.model, model), eq(r.id, id), isNull(r.consumedAt)));
  }

  async destroy(model: string, id: string): Promise<void> {
    const r = this.t.oauthRecords;
    await this.db.delete(r).where(and(eq(r.model, model), eq(r.id, id)));
  }

  async revokeGrant(grantId: string): Promise<void> {
    const r = this.t.oauthRecords;
    await this.db.delete(r).where(or(eq(r.grantId, grantId), and(eq(r.model, "Grant"), eq(r.id, grantId))));
  }

  async revokeAccount(accountId: string): Promise<number> {
    const r = this.t.oauthRecords;
    const gone = await this.db.delete(r).where(eq(r.accountId, accountId)).returning({ model: r.model });
    return gone.filter((record) => record.model === "Grant").length;
  }

  async grants(now: number, accountId?: string): Promise<OAuthRecord[]> {
    const r = this.t.oauthRecords;
    const whose = accountId === undefined ? undefined : eq(r.accountId, accountId);
    return this.db
      .select()
      .from(r)
      .where(and(eq(r.model, "Grant"), whose, or(isNull(r.expiresAt), gt(r.expiresAt, now))))
      .orderBy(r.expiresAt);
  }

  async grantsStartingWith(prefix: string, now: number): Promise<OAuthRecord[]> {
    const r = this.t.oauthRecords;
    // The lower bound lets the primary key (model, id) narrow the scan; substr keeps only true prefixes.
    const startsWith = and(gte(r.id, prefix), sql`substr(${r.id}, 1, ${prefix.length}) = ${prefix}`);
    return this.db
      .select()
      .from(r)
      .where(and(eq(r.model, "Grant"), startsWith, or(isNull(r.expiresAt), gt(r.expiresAt, now))));
  }

  async lastRefreshes(grantIds: string[]): Promise<Map<string, number>> {
    if (grantIds.length === 0) return new Map();
    const r = this.t.oauthRecords;
    const rows = await this.db
      .select({ grantId: r.grantId, at: max(r.consumedAt) })
      .from(r)
      .where(and(eq(r.model, "RefreshToken"), inArray(r.grantId, grantIds), isNotNull(r.consumedAt)))
      .groupBy(r.grantId);
    return new Map(rows.map((row) => [row.grantId as string, Number(row.at)]));
  }

  async purgeExpired(now: number): Promise<number> {
    const r = this.t.oauthRecords;
    const gone = await this.db.delete(r).where(lte(r.expiresAt, now)).returning({ id: r.id });
    return gone.length;
  }

  async insertOnce(record: OAuthRecord): Promise<OAuthRecord> {
    const r = this.t.oauthRecords;
    await this.db
      .insert(r)
      .values(record)
      .onConflictDoNothing({ target: [r.model, r.id] });
    const [stored] = await this.db
      .select()
      .from(r)
      .where(and(eq(r.model, record.model), eq(r.id, record.id)));
    return stored ?? record;
  }

  private async first(key: SQL, model: string, now: number): Promise<OAuthRecord | null> {
    const r = this.t.oauthRecords;
    const live = or(isNull(r.expiresAt), gt(r.expiresAt, now));
    const [row] = await this.db
      .select()
      .from(r)
      .where(and(eq(r.model, model), key, live))
      .limit(1);
    return row ?? null;
  }
}
