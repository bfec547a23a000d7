import type { Principal } from "../sdk/index.ts";
import type { Store } from "../store/store.ts";
import { type JwtVerifier, looksLikeJwt } from "./jwt.ts";
import { hashSecret } from "./tokens.ts";

/** What a request's `Authorization` header came to: a caller, or why there is none (RFC 6750 §3.1). */
export type Authentication = { principal: Principal } | { refused: "missing" | "invalid_token" };

/**
 * Turns a bearer credential into a Principal. Service keys (from the environment) are compared by
 * hash, never in clear; user tokens are looked up by hash in the store, so a revocation applies to
 * the next request; JWTs, when an issuer is configured, are verified with its keys (jwt.ts).
 */
export class Authenticator {
  private readonly serviceKeys: Map<string, Principal>;

  constructor(
    private readonly store: Store,
    serviceKeys: readonly string[],
    private readonly jwt: JwtVerifier | null = null,
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
    const row = await this.store.tokens.findByHash(hash);
    if (!row || row.revokedAt !== null) return null;
    return { kind: "user", id: row.userId };
  }
}

function bearerToken(authorization: string | null | undefined): string | null {
  if (!authorization) return null;
  const match = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(authorization);
  return match?.[1] ?? null;
}
