import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from "jose";
import type { KoaContextWithOIDC } from "oidc-provider";
import type { OAuthStore } from "../../store/oauth.ts";
import { GRANT_CLAIM } from "../sign-ins.ts";

/**
 * RFC 7009 for the authority's access tokens. They are JWTs, which oidc-provider keeps nowhere and
 * refuses at its revocation endpoint (`unsupported_token_type`, after authenticating the client). This
 * middleware takes over from that refusal: a token this authority signed for the client asking has its
 * grant revoked, as revoking the refresh token does (the sign-in ends: its refresh tokens at once, its
 * access tokens within TOKEN_RECHECK_MS). Anything else (not ours, expired, another client's) is
 * answered 200 and nothing is revoked, as RFC 7009 §2.2 answers an invalid token.
 */
export function revokeAccessTokens(options: { store: OAuthStore; issuer: string; keys: JSONWebKeySet }) {
  const keys = createLocalJWKSet(options.keys);
  const claimsOf = (token: unknown) =>
    typeof token === "string"
      ? jwtVerify(token, keys, { issuer: options.issuer, algorithms: ["RS256"] }).then(
          (verified) => verified.payload,
          () => null,
        )
      : null;
  return async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    await next();
    if (
      ctx.oidc?.route !== "revocation" ||
      (ctx.body as { error?: unknown } | null)?.error !== "unsupported_token_type"
    )
      return;
    const claims = await claimsOf(ctx.oidc.params?.token);
    const grantId = claims?.[GRANT_CLAIM];
    if (claims && typeof grantId === "string" && claims.client_id === ctx.oidc.client?.clientId) {
      await options.store.revokeGrant(grantId);
    }
    ctx.status = 200;
    ctx.body = "";
  };
}
