import type { Principal } from "../sdk/index.ts";
import type { Store } from "../store/store.ts";
import { type JwtVerifier, looksLikeJwt } from "./jwt.ts";
import { isScopedKey, scopedKeyPrincipal } from "./scoped-keys.ts";
import { hashSecret } from "./tokens.ts";

/** What a request's `Authorization` header came to: a caller, or why there is none (RFC 6750 §3.1). */
export type Authentication = { principal: Principal } | { refused: "missing" | "invalid_token" };

/** User tokens remembered at once; the one remembered longest ago is forgotten first. */
const MAX_REMEMBERED = 10_000;

/**
 * Turns a bearer credential into a Principal. Every secret is handled by its hash, never compared in
 * clear: service keys (from the environment) are hashed once, at start; user tokens and the stored keys
 * of organizations and environments (scoped-keys.ts: administrator where their scope covers this
 * environment) are looked up by hash in the store, and JWTs verified with their issuer's keys (jwt.ts: an identity provider's, or
 * the built-in authority's, whose sign-in must still stand). Either, once it names a caller, is
 * remembered for `recheckMs` (TOKEN_RECHECK_MS, 1 s by default; never past a JWT's expiry), so a
 * caller's requests cost one check per second, not one each, and a revocation (of a token or a
 * sign-in) or a disabled user (by the CLI, or on another instance) is refused by every server at most
 * `recheckMs` after it is stored.
 * Only credentials that named someone are remembered: an unknown one is checked every time, and cannot
 * fill the memory.
 */
export class Authenticator {
  private readonly serviceKeys: Map<string, Principal>;
  private readonly remembered = new Map<string, { principal: Principal; until: number }>();

  constructor(
    private readonly store: Store,
    serviceKeys: readonly string[],
    private readonly recheckMs: number,
    private readonly jwt: JwtVerifier | null = null,
    private readonly now: () => number = Date.now,
    /**
     * Hosting mode: whether a person may use this environment (a grant, `store.control.grants.mayUse`). A
     * user principal (user token or JWT) without one is refused, remembered as the rest, so revoking a grant
     * ends the person's tokens here within `recheckMs`. Unset (single mode): no check, no read.
     */
    private readonly mayUse: ((user: string) => Promise<boolean>) | null = null,
  ) {
    this.serviceKeys = new Map(
      serviceKeys.map((key) => {
        const hash = hashSecret(key);
        return [hash, { kind: "service", id: `service-${hash.slice(0, 12)}` }];
      }),
    );
  }

  /** The caller an `Authorization` header value names; a header that is not a bearer credential counts as missing. */
  async authenticate(authorization: string | null | undefined): Promise<Authentication> {
    const token = bearerToken(authorization);
    if (!token) return { refused: "missing" };
    const principal = await this.resolveToken(token);
    return principal ? { principal } : { refused: "invalid_token" };
  }

  async resolveToken(token: string): Promise<Principal | null> {
    const hash = hashSecret(token);
    const service = this.serviceKeys.get(hash);
    if (service) return service;
    const checkedAt = this.now();
    const known = this.remembered.get(hash);
    if (known && checkedAt < known.until) return known.principal;
    this.remembered.delete(hash);
    const principal = await this.callerOf(token, hash, checkedAt);
    if (!principal || this.recheckMs === 0) return principal ?? null;
    // Counted from before the check: whatever was revoked (a JWT's sign-in, its user disabled) after it is refused
    // within the bound; a JWT is never remembered past its own expiry.
    const expiry = typeof principal.claims?.exp === "number" ? principal.claims.exp * 1000 : Number.POSITIVE_INFINITY;
    if (this.remembered.size >= MAX_REMEMBERED) this.remembered.delete(this.remembered.keys().next().value as string);
    this.remembered.set(hash, { principal, until: Math.min(checkedAt + this.recheckMs, expiry) });
    return principal;
  }

  /** A JWT, a stored key of this environment or its organization, or a user token: whom it names. */
  private async callerOf(token: string, hash: string, now: number): Promise<Principal | null> {
    const jwt = this.jwt !== null && looksLikeJwt(token);
    if (!jwt && isScopedKey(token)) return scopedKeyPrincipal(this.store, hash, now);
    const user = jwt ? (this.jwt as JwtVerifier).verify(token) : this.userOfToken(hash);
    return this.mayUse === null ? user : this.granted(await user, this.mayUse);
  }

  /** The person, when this environment is theirs to use (hosting mode). */
  private async granted(user: Principal | null, mayUse: (user: string) => Promise<boolean>): Promise<Principal | null> {
    return user !== null && (await mayUse(user.id)) ? user : null;
  }

  private async userOfToken(hash: string): Promise<Principal | null> {
    const row = await this.store.tokens.findByHash(hash);
    return row && row.revokedAt === null ? { kind: "user", id: row.userId } : null;
  }

  /**
   * Which of these tokens still sign someone in, asked of the store once per 500 user tokens (the live
   * sessions' periodic check); JWTs are verified here, keys recognised.
   */
  async stillValid(tokens: string[]): Promise<Set<string>> {
    const valid = new Set<string>();
    const byHash = new Map<string, string>();
    for (const token of new Set(tokens)) {
      const hash = hashSecret(token);
      if (this.serviceKeys.has(hash)) valid.add(token);
      else if ((this.jwt && looksLikeJwt(token)) || isScopedKey(token)) {
        if (await this.callerOf(token, hash, this.now())) valid.add(token);
      } else byHash.set(hash, token);
    }
    const hashes = [...byHash.keys()];
    // Hosting mode: a person whose grant was revoked loses every socket here, whatever token it opened with.
    const granted = new Map<string, Promise<boolean>>();
    for (let i = 0; i < hashes.length; i += BATCH) {
      for (const row of await this.store.tokens.findByHashes(hashes.slice(i, i + BATCH))) {
        if (row.revokedAt !== null) continue;
        if (this.mayUse && !granted.has(row.userId)) granted.set(row.userId, this.mayUse(row.userId));
        if (!this.mayUse || (await granted.get(row.userId))) valid.add(byHash.get(row.tokenHash) as string);
      }
    }
    return valid;
  }
}

/** The most token hashes one lookup carries. */
const BATCH = 500;

export function bearerToken(authorization: string | null | undefined): string | null {
  if (!authorization) return null;
  const match = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(authorization);
  return match?.[1] ?? null;
}
