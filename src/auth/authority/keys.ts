import { randomBytes } from "node:crypto";
import type { JWK } from "jose";
import type { OAuthStore } from "../../store/oauth.ts";

export interface AuthorityKeys {
  /** The private signing key (RS256) of tokens this authority issues. */
  signing: JWK;
  /** Keys of the authority's cookies (sessions, interactions). */
  cookies: string[];
}

/**
 * The authority's keys, made by the first instance that needs them and read by every other from the
 * store (first writer wins), so all instances sign and verify alike across restarts.
 */
export async function authorityKeys(store: OAuthStore, now: number): Promise<AuthorityKeys> {
  const stored = await store.find("AuthorityKeys", "current", now);
  if (stored) return stored.payload as unknown as AuthorityKeys;
  const { generateKeyPair, exportJWK } = await import("jose");
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const kid = randomBytes(8).toString("base64url");
  const made: AuthorityKeys = {
    signing: { ...(await exportJWK(privateKey)), kid, alg: "RS256", use: "sig" },
    cookies: [randomBytes(32).toString("base64url")],
  };
  const kept = await store.insertOnce({
    model: "AuthorityKeys",
    id: "current",
    payload: made as unknown as Record<string, unknown>,
    grantId: null,
    accountId: null,
    uid: null,
    userCode: null,
    expiresAt: null,
    consumedAt: null,
  });
  return kept.payload as unknown as AuthorityKeys;
}

/** The public half of the signing key, for verifying tokens without asking the authority over HTTP. */
export function publicKeySet(keys: AuthorityKeys): { keys: JWK[] } {
  const { kid, alg, use, kty, n, e } = keys.signing;
  return { keys: [{ kid, alg, use, kty, n, e }] };
}
