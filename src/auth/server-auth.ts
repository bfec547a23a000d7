import type { Config } from "../config.ts";
import type { Log } from "../observe/log.ts";
import type { Store } from "../store/store.ts";
import { Authenticator } from "./authenticator.ts";
import type { Authority } from "./authority/authority.ts";
import { JwtVerifier } from "./jwt.ts";
import { SignIns } from "./sign-ins.ts";

/** How a server tells who calls it: what the app and live sockets take, and the authority to close. */
export interface ServerAuth {
  authenticator: Authenticator;
  signIns: SignIns;
  /** The built-in authority, started on first use; undefined with AUTH_ISSUER (the provider is the authority). */
  authority: (() => Promise<Authority>) | undefined;
  /** Closes the built-in authority, if it was started. */
  close(): Promise<void>;
}

/**
 * Service keys, user tokens and JWTs: those of AUTH_ISSUER, or without one those of the environment's own
 * authority (auth/authority/), whose keys and OAuth code are loaded only when first used.
 */
export function serverAuth(
  config: Config,
  { store, publicUrl, log }: { store: Store; publicUrl: () => string; log: Log },
): ServerAuth {
  let authority: Promise<Authority> | null = null;
  const startAuthority = () => {
    authority ??= import("./authority/authority.ts").then(({ Authority }) =>
      Authority.start({ store, issuer: publicUrl(), environment: config.handle, now: Date.now, log }),
    );
    authority.catch(() => {
      authority = null;
    });
    return authority;
  };
  const signIns = new SignIns({ store });
  const jwt = config.authIssuer
    ? new JwtVerifier({
        issuer: () => config.authIssuer as string,
        jwksUrl: config.jwt.jwksUrl,
        userClaim: config.jwt.userClaim,
        refetchMs: config.jwt.refetchMs,
        // RFC 8707: the token must be for this environment (its URL, or its /mcp resource), not another.
        audiences: () => {
          const audience = config.jwt.audience ?? publicUrl();
          return [audience, `${audience}/mcp`];
        },
      })
    : new JwtVerifier({
        issuer: publicUrl,
        audiences: () => [publicUrl(), `${publicUrl()}/mcp`],
        userClaim: "sub",
        refetchMs: config.jwt.refetchMs,
        localKeys: async () => {
          const { authorityKeys, publicKeySet } = await import("./authority/keys.ts");
          return publicKeySet(await authorityKeys(store.oauth, Date.now()));
        },
        signInActive: (user, claims) => signIns.active(user, claims),
      });
  return {
    authenticator: new Authenticator(store, config.serviceKeys, config.tokenRecheckMs, jwt),
    signIns,
    authority: config.authIssuer ? undefined : startAuthority,
    async close() {
      await (await authority?.catch(() => null))?.close();
    },
  };
}
