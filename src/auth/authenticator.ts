import type { Principal } from "../sdk/index.ts";
import type { Store } from "../store/store.ts";
import { type JwtVerifier, looksLikeJwt } from "./jwt.ts";
import { hashSecret } from "./tokens.ts";

/** What a request's `Authorization` header came to: a caller, or why there is none (RFC 6750 §3.1). */
export type Authentication = { principal: Principal } | { refused: "missing" | "invalid_token" };

/** User tokens remembered at once; the one remembered longest ago is forgotten first. */
const MAX_REMEMBERED = 10_000;

/**
 * Turns a bearer credential into a Principal. Every secret is handled by its hash, never compared in
 * clear: service keys (from the environment) are hashed once, at start; user tokens are looked up by
 * hash in the store, then remembered for `recheckMs` (TOKEN_RECHECK_MS, 1 s by default), so a caller's
 * requests cost one store read per second, not one each, and a revocation (by the CLI, or on another
 * instance) is refused by every server at most `recheckMs` after it is stored. Only tokens the store
 * vouched for are remembered: an unknown credential reaches the store every time, and cannot fill the
 * memory. JWTs, when an issuer is configured (or the built-in authority's), are verified with its keys
 * (jwt.ts) on every request.
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
    if (this.jwt && looksLikeJwt(token)) return this.jwt.verify(token);
    const hash = hashSecret(token);
    const service = this.serviceKeys.get(hash);
    if (service) return service;
    const checkedAt = this.now();
    const known = this.remembered.get(hash);
    if (known && checkedAt < known.until) return known.principal;
    this.remembered.delete(hash);
    const row = await this.store.tokens.findByHash(hash);
    if (!row || row.revokedAt !== null) return null;
    const principal: Principal = { kind: "user", id: row.userId };
    if (this.recheckMs === 0) return principal;
    if (this.remembered.size >= MAX_REMEMBERED) this.remembered.delete(this.remembered.keys().next().value as string);
    // Counted from before the read: whatever was revoked after it is refused within the bound.
    this.remembered.set(hash, { principal, until: checkedAt + this.recheckMs });
    return principal;
  }

  /**
   * Which of these tokens still sign someone in, asked of the store once per 500 user tokens (the live
   * sessions' periodic check); JWTs are verified here, keys recognised.
   */
  async stillValid(tokens: string[]): Promise<Set<string>> {
    const valid = new Set<string>();
    const byHash = new Map<string, string>();
    for (const token of new Set(tokens)) {
      if (this.jwt && looksLikeJwt(token)) {
        if (await this.jwt.verify(token)) valid.add(token);
        continue;
      }
      const hash = hashSecret(token);
      if (this.serviceKeys.has(hash)) valid.add(token);
      else byHash.set(hash, token);
    }
    const hashes = [...byHash.keys()];
    for (let i = 0; i < hashes.length; i += BATCH) {
      for (const row of await this.store.tokens.findByHashes(hashes.slice(i, i + BATCH))) {
        if (row.revokedAt === null) valid.add(byHash.get(row.tokenHash) as string);
      }
    }
    return valid;
  }
}

/** The most token hashes one lookup carries. */
const BATCH = 500;

function bearerToken(authorization: string | null | undefined): string | null {
  if (!authorization) return null;
  const match = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(authorization);
  return match?.[1] ?? null;
}
