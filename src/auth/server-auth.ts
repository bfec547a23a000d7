import type { Config, ServiceUrl } from "../config.ts";
import { serviceUrlOf } from "../config.ts";
import type { Log } from "../observe/log.ts";
import type { Store } from "../store/store.ts";
import { Authenticator } from "./authenticator.ts";
import type { Authority } from "./authority/authority.ts";
import { JwtVerifier } from "./jwt.ts";
import { environmentAccess } from "./service-authority.ts";
import { SignIns } from "./sign-ins.ts";

/** How a server tells who calls it: what the app and live sockets take, and the authority to close. */
export interface ServerAuth {
  authenticator: Authenticator;
  signIns: SignIns;
  /**
   * The built-in authority, started on first use; undefined with AUTH_ISSUER (the provider is the
   * authority) and in hosting mode (the service's, at the apex: service-authority.ts).
   */
  authority: (() => Promise<Authority>) | undefined;
  /** Hosting mode with the service's authority: its URL (SERVICE_URL), which the resource metadata names. */
  serviceAuthority?: string;
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
  if (config.hosting && !config.authIssuer) {
    const here = () => [publicUrl(), `${publicUrl()}/mcp`];
    return hostedAuth(config, config.hosting.service, { store, publicUrl }, new SignIns({ store, resources: here }));
  }
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
    : builtInVerifier(config, store, signIns, publicUrl, () => [publicUrl(), `${publicUrl()}/mcp`]);
  // Hosting mode with AUTH_ISSUER: still only the people an environment was granted to.
  const mayUse = config.hosting ? grantedIn(store) : null;
  return {
    authenticator: new Authenticator(store, config.serviceKeys, config.tokenRecheckMs, jwt, Date.now, mayUse),
    signIns,
    authority: config.authIssuer ? undefined : startAuthority,
    async close() {
      await (await authority?.catch(() => null))?.close();
    },
  };
}

/**
 * An environment of hosting mode, whose authority is the service's (issuer SERVICE_URL, keys in the shared
 * store): its tokens must name this environment (its URL or its /mcp: RFC 8707), so another environment's
 * are refused, and their person must have been granted it.
 */
function hostedAuth(
  config: Config,
  service: ServiceUrl,
  { store, publicUrl }: { store: Store; publicUrl: () => string },
  signIns: SignIns,
): ServerAuth {
  const issuer = serviceUrlOf(service);
  const jwt = builtInVerifier(
    config,
    store,
    signIns,
    () => issuer,
    () => [publicUrl(), `${publicUrl()}/mcp`],
  );
  return {
    authenticator: new Authenticator(store, config.serviceKeys, config.tokenRecheckMs, jwt, Date.now, grantedIn(store)),
    signIns,
    authority: undefined,
    serviceAuthority: issuer,
    async close() {},
  };
}

/**
 * The apex's authenticator (hosting mode): the service keys, and with the service's own authority its
 * JWTs for the apex (audience SERVICE_URL, RFC 8707) whose sign-in stands: a person at the service's
 * console. No grant is asked here (the control API lists what the person was granted); another
 * environment's token has another audience and is refused.
 */
export function apexAuthenticator(config: Config, store: Store): Authenticator {
  const service = config.hosting?.service;
  if (!service || config.authIssuer) return new Authenticator(store, config.serviceKeys, config.tokenRecheckMs);
  const issuer = serviceUrlOf(service);
  const signIns = new SignIns({ store, resources: () => [issuer] });
  const jwt = builtInVerifier(
    config,
    store,
    signIns,
    () => issuer,
    () => [issuer],
  );
  return new Authenticator(store, config.serviceKeys, config.tokenRecheckMs, jwt);
}

/**
 * The JWTs of our own authority (an environment's, or hosting mode's one): its keys read from the store
 * on first use, and a token counts only while its sign-in stands.
 */
function builtInVerifier(
  config: Config,
  store: Store,
  signIns: SignIns,
  issuer: () => string,
  audiences: () => string[],
): JwtVerifier {
  return new JwtVerifier({
    issuer,
    audiences,
    userClaim: "sub",
    refetchMs: config.jwt.refetchMs,
    localKeys: async () => {
      const { authorityKeys, publicKeySet } = await import("./authority/keys.ts");
      return publicKeySet(await authorityKeys(store.oauth, Date.now()));
    },
    signInActive: (user, claims) => signIns.active(user, claims),
  });
}

/** Whether a person may use the store's environment: its organization, read once, decides whether a grant is needed. */
function grantedIn(store: Store): (user: string) => Promise<boolean> {
  let access: Promise<(user: string) => Promise<boolean>> | null = null;
  return async (user) => {
    // An environment gone (deleted) is no one's.
    access ??= store.control.environments
      .byId(store.environmentId)
      .then((row) => (row ? environmentAccess(store, row.id, row.organization) : async () => false));
    access.catch(() => {
      access = null;
    });
    return (await access)(user);
  };
}
