import type { OAuthRecord } from "./rows.ts";

/**
 * The built-in authority's records (oidc-provider's models: clients, grants, codes, tokens, sessions,
 * interactions, keys), shared by every instance. A record past `expiresAt` is gone for every read.
 */
export interface OAuthStore {
  /** Inserts or replaces the record of (model, id). */
  upsert(record: OAuthRecord): Promise<void>;
  find(model: string, id: string, now: number): Promise<OAuthRecord | null>;
  /** The live records of these ids (those that exist), in no order. */
  findMany(model: string, ids: string[], now: number): Promise<OAuthRecord[]>;
  findByUid(model: string, uid: string, now: number): Promise<OAuthRecord | null>;
  findByUserCode(model: string, userCode: string, now: number): Promise<OAuthRecord | null>;
  /**
   * Marks a code or token used (a second use is then refused by the authority). The first use's time
   * stays: a refresh token's grace window is counted from it, however often it is used within it.
   */
  consume(model: string, id: string, at: number): Promise<void>;
  destroy(model: string, id: string): Promise<void>;
  /** Removes a grant and every record of it (its codes and tokens): a revocation. */
  revokeGrant(grantId: string): Promise<void>;
  /** Removes everything issued to a person (grants, codes, tokens, sessions): a disabled user. Answers how many grants (sign-ins) ended. */
  revokeAccount(accountId: string): Promise<number>;
  /** The grants that have not expired at `now` (a person's, or everyone's), oldest first. */
  grants(now: number, accountId?: string): Promise<OAuthRecord[]>;
  /** The live grants whose id starts with `prefix`. */
  grantsStartingWith(prefix: string, now: number): Promise<OAuthRecord[]>;
  /** When each of these grants last refreshed (its newest refresh token's use); a grant never refreshed is absent. */
  lastRefreshes(grantIds: string[]): Promise<Map<string, number>>;
  /** Deletes the records that expired before `now`; answers how many. */
  purgeExpired(now: number): Promise<number>;
  /** Inserts the record unless (model, id) exists; either way answers the stored one (first writer wins). */
  insertOnce(record: OAuthRecord): Promise<OAuthRecord>;
}
