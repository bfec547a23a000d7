import type { OAuthRecord } from "./rows.ts";

/**
 * The built-in authority's records (oidc-provider's models: clients, grants, codes, tokens, sessions,
 * interactions, keys), shared by every instance. A record past `expiresAt` is gone for every read.
 */
export interface OAuthStore {
  /** Inserts or replaces the record of (model, id). */
  upsert(record: OAuthRecord): Promise<void>;
  find(model: string, id: string, now: number): Promise<OAuthRecord | null>;
  findByUid(model: string, uid: string, now: number): Promise<OAuthRecord | null>;
  findByUserCode(model: string, userCode: string, now: number): Promise<OAuthRecord | null>;
  /** Marks a code or token used (a second use is then refused by the authority). */
  consume(model: string, id: string, at: number): Promise<void>;
  destroy(model: string, id: string): Promise<void>;
  /** Removes every record of a grant (its codes and tokens): a revocation. */
  revokeGrant(grantId: string): Promise<void>;
  /** Removes everything issued to a person (grants, codes, tokens, sessions): a disabled user. Answers how many grants (sign-ins) ended. */
  revokeAccount(accountId: string): Promise<number>;
  /** The grants a person or anyone holds that have not expired at `now`, oldest first. */
  grants(now: number): Promise<OAuthRecord[]>;
  /** Deletes the records that expired before `now`; answers how many. */
  purgeExpired(now: number): Promise<number>;
  /** Inserts the record unless (model, id) exists; either way answers the stored one (first writer wins). */
  insertOnce(record: OAuthRecord): Promise<OAuthRecord>;
}
