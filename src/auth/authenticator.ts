import type { Principal } from "../sdk/index.ts";
import type { Store } from "../store/store.ts";
import { hashSecret } from "./tokens.ts";

/**
 * Turns a bearer credential into a Principal. Service keys (from the environment) are compared by
 * hash, never in clear; user tokens are looked up by hash in the store, so a revocation applies to
 * the next request.
 */
export class Authenticator {
  private readonly serviceKeys: Map<string, Principal>;

  constructor(
    private readonly store: Store,
    serviceKeys: readonly string[],
  ) {
    this.serviceKeys = new Map(
      serviceKeys.map((key) => {
        const hash = hashSecret(key);
        return [hash, { kind: "service", id: `service-${hash.slice(0, 12)}` }];
      }),
    );
  }

  /** The principal for an `Authorization` header value, or null when missing or unknown. */
  async authenticate(authorization: string | null | undefined): Promise<Principal | null> {
    const token = bearerToken(authorization);
    if (!token) return null;
    return this.resolveToken(token);
  }

  async resolveToken(token: string): Promise<Principal | null> {
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
