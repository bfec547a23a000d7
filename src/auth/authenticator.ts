import type { Principal } from "../sdk/index.ts";
import type { Store } from "../store/store.ts";
import { hashSecret } from "./tokens.ts";

/** User tokens remembered at once; the one remembered longest ago is forgotten first. */
const MAX_REMEMBERED = 10_000;

/**
 * Turns a bearer credential into a Principal. Service keys (from the environment) are hashed once, at
 * start, and recognised by value. User tokens are looked up by hash in the store, then remembered for
 * `recheckMs` (TOKEN_RECHECK_MS, 1 s by default), so a caller's requests cost one store read per
 * second, not one each, and a revocation (by the CLI, or on another instance) is refused by every
 * server at most `recheckMs` after it is stored. Only tokens the store vouched for are remembered: an
 * unknown credential reaches the store every time, and cannot fill the memory.
 */
export class Authenticator {
  private readonly serviceKeys: Map<string, Principal>;
  private readonly remembered = new Map<string, { principal: Principal; until: number }>();

  constructor(
    private readonly store: Store,
    serviceKeys: readonly string[],
    private readonly recheckMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.serviceKeys = new Map(
      serviceKeys.map((key) => [key, { kind: "service", id: `service-${hashSecret(key).slice(0, 12)}` }]),
    );
  }

  /** The principal for an `Authorization` header value, or null when missing or unknown. */
  async authenticate(authorization: string | null | undefined): Promise<Principal | null> {
    const token = bearerToken(authorization);
    if (!token) return null;
    return this.resolveToken(token);
  }

  async resolveToken(token: string): Promise<Principal | null> {
    const service = this.serviceKeys.get(token);
    if (service) return service;
    const checkedAt = this.now();
    const known = this.remembered.get(token);
    if (known && checkedAt < known.until) return known.principal;
    this.remembered.delete(token);
    const row = await this.store.tokens.findByHash(hashSecret(token));
    if (!row || row.revokedAt !== null) return null;
    const principal: Principal = { kind: "user", id: row.userId };
    if (this.recheckMs === 0) return principal;
    if (this.remembered.size >= MAX_REMEMBERED) this.remembered.delete(this.remembered.keys().next().value as string);
    // Counted from before the read: whatever was revoked after it is refused within the bound.
    this.remembered.set(token, { principal, until: checkedAt + this.recheckMs });
    return principal;
  }
}

function bearerToken(authorization: string | null | undefined): string | null {
  if (!authorization) return null;
  const match = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(authorization);
  return match?.[1] ?? null;
}
