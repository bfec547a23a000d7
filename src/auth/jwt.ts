import type { JSONWebKeySet, JWTPayload, JWTVerifyGetKey } from "jose";
import type { Principal } from "../sdk/index.ts";

export interface JwtSettings {
  /** The identity provider whose tokens are accepted (`iss`); its metadata names its keys. */
  issuer: () => string;
  /** Where its keys are, when its metadata should not be asked (AUTH_JWKS_URL). */
  jwksUrl?: string;
  /** Its keys, when they are at hand (the built-in authority's): no HTTP at all. */
  localKeys?: () => Promise<JSONWebKeySet>;
  /** Whether the sign-in a valid token carries still stands (the built-in authority: its person not disabled, its grant not revoked). */
  signInActive?: (user: string, claims: JWTPayload) => Promise<boolean>;
  /** The audiences a token must name one of (RFC 8707: a token for another resource must not work here). */
  audiences: () => string[];
  /** The claim that names the user (AUTH_USER_CLAIM, default `sub`). */
  userClaim: string;
  /** An unknown `kid` refetches the key set at most this often, so forged kids cannot hammer the issuer. */
  refetchMs: number;
}

/** Only asymmetric algorithms: a public key must never verify an HMAC, and `none` is never accepted. */
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];
/** Clocks of the issuer and this server may differ this much (seconds) for `exp` and `nbf`. */
const CLOCK_TOLERANCE_S = 30;
/** Keys are refetched at least this often, so a key the issuer withdrew stops verifying. */
const KEYS_MAX_AGE_MS = 10 * 60_000;
const DISCOVERY_TIMEOUT_MS = 5_000;

/** A compact JWS: three base64url parts. Our own tokens and service keys never look like one. */
export const looksLikeJwt = (token: string) => /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token);

/**
 * Verifies bearer JWTs of one issuer with its published keys (jose). jose is loaded, and the issuer's
 * metadata read, on the first JWT seen: a server that never receives one pays nothing for it.
 */
export class JwtVerifier {
  private keys: Promise<JWTVerifyGetKey> | null = null;

  constructor(private readonly settings: JwtSettings) {}

  /** The user a valid token names (with its verified claims), or null for any token that does not verify. */
  async verify(token: string): Promise<Principal | null> {
    const { jwtVerify, errors } = await import("jose");
    try {
      const { payload } = await jwtVerify(token, await this.keySet(), {
        issuer: this.settings.issuer(),
        audience: this.settings.audiences(),
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ["exp"],
      });
      const user = payload[this.settings.userClaim];
      if (typeof user !== "string" || user === "") return null;
      if (this.settings.signInActive && !(await this.settings.signInActive(user, payload))) return null;
      return { kind: "user", id: user, claims: payload };
    } catch (error) {
      if (error instanceof errors.JOSEError) return null;
      throw error;
    }
  }

  private keySet(): Promise<JWTVerifyGetKey> {
    if (this.keys) return this.keys;
    const localKeys = this.settings.localKeys;
    this.keys = localKeys
      ? import("jose").then(async ({ createLocalJWKSet }) => createLocalJWKSet(await localKeys()))
      : this.jwksUrl().then(async (url) => {
          const { createRemoteJWKSet } = await import("jose");
          return createRemoteJWKSet(new URL(url), {
            cooldownDuration: this.settings.refetchMs,
            cacheMaxAge: KEYS_MAX_AGE_MS,
            timeoutDuration: DISCOVERY_TIMEOUT_MS,
          });
        });
    // A provider that was down, or a database that could not be reached for the local keys, is asked
    // again by the next token.
    this.keys.catch(() => {
      this.keys = null;
    });
    return this.keys;
  }

  /** AUTH_JWKS_URL, or `jwks_uri` from the issuer's OpenID or OAuth (RFC 8414) metadata. */
  private async jwksUrl(): Promise<string> {
    if (this.settings.jwksUrl) return this.settings.jwksUrl;
    for (const url of metadataUrls(this.settings.issuer())) {
      const response = await fetch(url, { signal: AbortSignal.timeout(DISCOVERY_TIMEOUT_MS) }).catch(() => null);
      if (!response?.ok) continue;
      const metadata = (await response.json().catch(() => null)) as { issuer?: unknown; jwks_uri?: unknown } | null;
      // RFC 8414 §3.3: metadata naming another issuer must not be used.
      if (metadata?.issuer === this.settings.issuer() && typeof metadata.jwks_uri === "string")
        return metadata.jwks_uri;
    }
    throw new Error(`no key set found in the metadata of ${this.settings.issuer()}`);
  }
}

/** OpenID discovery appends its path; RFC 8414 inserts its well-known path before the issuer's own path. */
function metadataUrls(issuer: string): string[] {
  const { origin, pathname } = new URL(issuer);
  const path = pathname === "/" ? "" : pathname.replace(/\/$/, "");
  return [
    `${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`,
    `${origin}/.well-known/oauth-authorization-server${path}`,
    `${origin}/.well-known/openid-configuration${path}`,
  ];
}
