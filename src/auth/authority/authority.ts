import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Configuration, KoaContextWithOIDC } from "oidc-provider";
import Provider, { errors } from "oidc-provider";
import { PublicError } from "../../lib/errors.ts";
import { LoopFailures } from "../../lib/loop-failures.ts";
import { isLoopbackHost } from "../../lib/loopback.ts";
import type { Log } from "../../observe/log.ts";
import type { Store } from "../../store/store.ts";
import { GRANT_CLAIM } from "../sign-ins.ts";
import { checkPassword } from "../users.ts";
import { storeAdapter } from "./adapter.ts";
import { answerProviderFailures, interactionFailureAnswer, relayedRequestId } from "./failures.ts";
import { authorityKeys, publicKeySet } from "./keys.ts";
import { consentPage, noAccessPage, signInPage } from "./pages.ts";
import { Attempts } from "./rate-limit.ts";
import { redirectRules } from "./redirects.ts";
import { revokeAccessTokens } from "./revoke-access-tokens.ts";

export interface AuthorityOptions {
  store: Store;
  /**
   * The issuer: the environment's public URL, also the resource its tokens are for (single mode); or the
   * service's (SERVICE_URL), for its environments' resources (hosting mode, `resources`).
   */
  issuer: string;
  /** What a person signs in to, on the sign-in page: the environment's handle, or the service's host. */
  environment: string;
  /**
   * Hosting mode: the environment of the service a resource indicator (RFC 8707) names, or null. A request
   * must then name one (no default resource), and its tokens are for that environment only. Unset: the
   * issuer's own `<issuer>` and `<issuer>/mcp` (single mode), the default `<issuer>/mcp`.
   */
  resources?: (resource: string) => Promise<ResourceEnvironment | null>;
  now: () => number;
  log: Log;
}

/** An environment a token may be for, as the authority shows it and checks who may use it. */
export interface ResourceEnvironment {
  handle: string;
  /** The service itself (the apex): a token for it lists the environments the person may open, nothing more. */
  service?: boolean;
  /** Whether the person may use it (hosting mode: granted by an administrator of its organization). */
  mayUse(user: string): Promise<boolean>;
}

/** Where the authority's endpoints are; the protected-resource metadata and the proxy in http/ use them. */
export const AUTHORITY_ROUTES = {
  authorization: "/oauth/authorize",
  token: "/oauth/token",
  registration: "/oauth/register",
  jwks: "/oauth/jwks",
  revocation: "/oauth/revoke",
  end_session: "/oauth/logout",
  userinfo: "/oauth/userinfo",
  introspection: "/oauth/introspect",
  pushed_authorization_request: "/oauth/par",
  code_verification: "/oauth/device",
  device_authorization: "/oauth/device/auth",
  backchannel_authentication: "/oauth/backchannel",
  challenge: "/oauth/challenge",
} as const;

/** The one scope of this environment's resource: acting as the person, everywhere (HTTP, /mcp, /session). */
export const RESOURCE_SCOPE = "mcp";

/** The reason the no-access page's way back gives. */
const NO_ACCESS = "no-access";
const noAccessMessage = (environments: ResourceEnvironment[]) =>
  `no access to ${environments.map((e) => e.handle).join(", ")}: an administrator of its organization can grant it`;
const INTERACTION = /^\/oauth\/interaction\/([\w-]+)(?:\/(login|confirm|abort))?$/;
const FORM_LIMIT = 16 * 1024;
const PURGE_EVERY_MS = 60 * 60_000;

/**
 * The environment as its own OAuth 2.1 authorization server (issue #15), for when no AUTH_ISSUER is
 * configured: oidc-provider (the reference implementation) does the protocol (metadata, dynamic client
 * registration, authorization code with PKCE S256, resource indicators, refresh token rotation,
 * revocation); this module gives it storage (the store), keys, people (users.ts) and the sign-in and
 * consent pages. oidc-provider is a Node (req, res) application, so it runs on a loopback node:http
 * server of this process that http/oauth.ts proxies to; this module (and oidc-provider with it) is
 * loaded on the first /oauth request.
 */
export class Authority {
  private readonly purge: Timer;

  private constructor(
    private readonly server: Server,
    options: AuthorityOptions,
  ) {
    // Expired codes, tokens, sessions and interactions are dropped hourly (and once now), by any instance.
    const failures = new LoopFailures("purging expired sign-in records", options.log);
    const purge = () =>
      options.store.oauth.purgeExpired(options.now()).then(
        () => failures.worked(),
        (error) => failures.failed(error),
      );
    void purge();
    this.purge = setInterval(purge, PURGE_EVERY_MS);
    this.purge.unref();
  }

  /** Where the proxy sends requests: this process's loopback server. */
  get origin(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  static async start(options: AuthorityOptions): Promise<Authority> {
    const keys = await authorityKeys(options.store.oauth, options.now());
    const ownResources = new Set([options.issuer, `${options.issuer}/mcp`]);
    const own: ResourceEnvironment = { handle: options.environment, mayUse: async () => true };
    const resourceOf = options.resources ?? (async (resource: string) => (ownResources.has(resource) ? own : null));
    const configuration: Configuration = {
      adapter: storeAdapter(options.store.oauth, options.now, isLoopbackUrl(options.issuer)),
      discovery: { client_id_metadata_document_supported: true },
      jwks: { keys: [keys.signing as never] },
      cookies: { keys: keys.cookies },
      routes: AUTHORITY_ROUTES,
      scopes: ["openid", "offline_access", RESOURCE_SCOPE],
      // OAuth 2.1: the authorization code flow only (no implicit or hybrid responses).
      responseTypes: ["code"],
      clientDefaults: {
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
        id_token_signed_response_alg: "RS256",
      },
      // Which redirect URIs a client may use: an app's own scheme, loopback on any port, never cleartext elsewhere.
      extraClientMetadata: redirectRules,
      features: {
        devInteractions: { enabled: false },
        registration: { enabled: true },
        revocation: { enabled: true },
        resourceIndicators: {
          enabled: true,
          // Hosting mode: no default, a token is for the one environment the client names.
          defaultResource: (_ctx: KoaContextWithOIDC, _client: unknown, oneOf?: readonly string[]) => {
            if (!options.resources) return `${options.issuer}/mcp`;
            if (oneOf) return oneOf;
            throw new errors.InvalidTarget("name the environment: resource=<its URL>/mcp (RFC 8707)");
          },
          useGrantedResource: () => true,
          // RFC 8707: tokens only for this environment (hosting: one of the service's); their audience is the resource asked for.
          getResourceServerInfo: async (_ctx: KoaContextWithOIDC, resource: string) => {
            if (!(await resourceOf(resource))) throw new errors.InvalidTarget();
            return { scope: RESOURCE_SCOPE, audience: resource, accessTokenTTL: 3600, accessTokenFormat: "jwt" };
          },
        },
      },
      pkce: { required: () => true },
      // Every client that may use refresh tokens gets them (MCP clients rarely ask for offline_access).
      issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed("refresh_token"),
      rotateRefreshToken: true,
      // A sign-in lasts as its grant does (30 days), not as the browser session it was made in (14 days;
      // oidc-provider ties tokens without offline_access to it, and MCP clients rarely ask for it).
      expiresWithSession: () => false,
      // Hosting mode: an earlier consent is not reused for a person no longer granted the environment
      // asked for, who is then sent to the pages, which refuse.
      async loadExistingGrant(ctx) {
        const grantId =
          ctx.oidc.result?.consent?.grantId || ctx.oidc.session?.grantIdFor(ctx.oidc.client?.clientId ?? "");
        if (!grantId) return undefined;
        const user = ctx.oidc.session?.accountId;
        if (options.resources && user) {
          const asked = ctx.oidc.params?.resource;
          for (const resource of asked === undefined ? [] : Array.isArray(asked) ? asked : [asked]) {
            const environment = await resourceOf(String(resource));
            if (!environment || !(await environment.mayUse(user))) return undefined;
          }
        }
        return ctx.oidc.provider.Grant.find(grantId);
      },
      // Access tokens name their grant: the resource side refuses them once it is revoked (sign-ins.ts).
      extraTokenClaims: (_ctx, token) => ("grantId" in token ? { [GRANT_CLAIM]: token.grantId } : undefined),
      ttl: {
        AccessToken: 3600,
        AuthorizationCode: 60,
        Interaction: 15 * 60,
        Grant: 30 * 24 * 3600,
        Session: 14 * 24 * 3600,
        RefreshToken: 30 * 24 * 3600,
      },
      interactions: { url: (_ctx, interaction) => `/oauth/interaction/${interaction.uid}` },
      async findAccount(_ctx, sub) {
        const user = await options.store.users.get(sub);
        if (!user || user.disabledAt !== null) return undefined;
        return { accountId: sub, claims: () => ({ sub }) };
      },
      renderError(ctx, out) {
        ctx.type = "json";
        ctx.body = { ok: false, error: out.error, message: out.error_description ?? out.error };
      },
    };
    const provider = new Provider(options.issuer, configuration);
    // Requests arrive through this process's relay (http/oauth.ts), which sets X-Forwarded-* from PUBLIC_URL.
    provider.proxy = true;
    // Outermost, so that it also answers for the middleware below.
    answerProviderFailures(provider, options.log);
    provider.use(revokeAccessTokens({ store: options.store.oauth, issuer: options.issuer, keys: publicKeySet(keys) }));
    // A client that asks for no scope asks for the resource's: an empty grant would be refused later.
    provider.use(async (ctx, next) => {
      if (ctx.path === AUTHORITY_ROUTES.authorization && ctx.method === "GET" && !ctx.query.scope) {
        ctx.query = { ...ctx.query, scope: RESOURCE_SCOPE };
      }
      await next();
    });
    const interactions = new Interactions(provider, options, resourceOf, keys.cookies[0] as string);
    const callback = provider.callback();
    const server = createServer((req, res) => {
      const match = INTERACTION.exec(req.url?.split("?")[0] ?? "");
      if (!match) return callback(req, res);
      interactions.handle(req, res, match[1] as string, match[2]).catch((error) => {
        const answer = interactionFailureAnswer(error, options.log, relayedRequestId(req.headers));
        if (res.headersSent) res.end();
        else sendJson(res, answer.status, answer.body, answer.headers);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return new Authority(server, options);
  }

  async close(): Promise<void> {
    clearInterval(this.purge);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** The sign-in and consent steps of an authorization request. */
class Interactions {
  private readonly attempts = new Attempts({ limit: 10, windowMs: 15 * 60_000 });

  constructor(
    private readonly provider: Provider,
    private readonly options: AuthorityOptions,
    private readonly resourceOf: (resource: string) => Promise<ResourceEnvironment | null>,
    private readonly csrfKey: string,
  ) {}

  /** The environments the authorization request names (its resource indicators), as the pages show them. */
  private async environmentsOf(params: Record<string, unknown>): Promise<ResourceEnvironment[]> {
    const asked = params.resource;
    const resources = asked === undefined ? [] : Array.isArray(asked) ? asked : [asked];
    const found = await Promise.all(resources.map((resource) => this.resourceOf(String(resource))));
    return found.filter((environment): environment is ResourceEnvironment => environment !== null);
  }

  /** The first of `environments` the person may not use (hosting mode: no grant), if any. */
  private async refusedOf(environments: ResourceEnvironment[], user: string): Promise<ResourceEnvironment | null> {
    const allowed = await Promise.all(environments.map((environment) => environment.mayUse(user)));
    return environments[allowed.indexOf(false)] ?? null;
  }

  async handle(req: IncomingMessage, res: ServerResponse, uid: string, step: string | undefined) {
    const details = await this.provider.interactionDetails(req, res);
    if (details.uid !== uid)
      return sendJson(res, 400, { ok: false, error: "invalid_request", message: "unknown sign-in" });
    const client = await this.provider.Client.find(String(details.params.client_id));
    const clientName = client?.clientName ?? String(details.params.client_id);
    const environment = this.options.environment;
    const asked = await this.environmentsOf(details.params);
    // Hosting mode: the environments asked for are named; the sign-in page names the service.
    const resources = this.options.resources ? asked.map((e) => e.handle).join(", ") : undefined;
    const csrf = this.csrf(uid);
    const abort = `/oauth/interaction/${uid}/abort`;
    const signIn = (status: number, again?: { user: string; error: string }) =>
      sendHtml(
        res,
        status,
        signInPage({
          action: `/oauth/interaction/${uid}/login`,
          csrf,
          environment,
          resources,
          client: clientName,
          ...again,
        }),
      );
    // A person the environment was not granted to: a page that says so, whose button tells the client (access_denied).
    const noAccess = (user: string, refused: ResourceEnvironment) =>
      sendHtml(res, 403, noAccessPage({ abort, csrf, environment: refused.handle, client: clientName, user }));
    if (req.method === "GET" && step === undefined) {
      if (details.prompt.name === "login") return signIn(200);
      const user = String(details.session?.accountId ?? "");
      const refused = await this.refusedOf(asked, user);
      if (refused) return noAccess(user, refused);
      return sendHtml(
        res,
        200,
        consentPage({
          confirm: `/oauth/interaction/${uid}/confirm`,
          abort,
          csrf,
          environment: resources ?? environment,
          client: clientName,
          user,
          listsOnly: asked.length > 0 && asked.every((e) => e.service === true),
        }),
      );
    }
    if (req.method !== "POST" || step === undefined) {
      return sendJson(res, 405, { ok: false, error: "method_not_allowed", message: "use the form" });
    }
    const form = await readForm(req);
    if (!this.csrfMatches(uid, form.get("csrf"))) {
      return sendJson(res, 403, { ok: false, error: "forbidden", message: "the form did not come from this sign-in" });
    }
    if (step === "abort") {
      return this.provider.interactionFinished(
        req,
        res,
        {
          error: "access_denied",
          // The way back from the no-access page says why (its form names no environment: the request does).
          error_description: form.get("reason") === NO_ACCESS ? noAccessMessage(asked) : "the person declined",
        },
        { mergeWithLastSubmission: false },
      );
    }
    if (step === "login") {
      if (details.prompt.name !== "login")
        return sendJson(res, 400, { ok: false, error: "invalid_request", message: "already signed in" });
      const user = form.get("user") ?? "";
      const address = String(req.headers["x-forwarded-for"] ?? req.socket.remoteAddress ?? "");
      const keys = [`user:${user}`, `address:${address}`];
      if (this.attempts.blocked(keys, this.options.now())) {
        res.setHeader("retry-after", "900");
        return signIn(429, { user, error: "Too many failed sign-ins; try again later." });
      }
      const verdict = await checkPassword(this.options.store, user, form.get("password") ?? "");
      if (verdict === "refused") {
        this.attempts.fail(keys, this.options.now());
        return signIn(401, { user, error: "Wrong user or password." });
      }
      // Said only to whoever knows the password: an unknown user and a wrong password answer alike.
      if (verdict === "disabled") {
        return signIn(403, {
          user,
          error: `This account is disabled; ask an administrator of ${environment} to enable it.`,
        });
      }
      const refused = await this.refusedOf(asked, user);
      if (refused) return noAccess(user, refused);
      return this.provider.interactionFinished(
        req,
        res,
        { login: { accountId: user } },
        { mergeWithLastSubmission: false },
      );
    }
    // confirm: grant what was asked, for this client and this person.
    if (details.prompt.name !== "consent" || !details.session) {
      return sendJson(res, 400, { ok: false, error: "invalid_request", message: "nothing to confirm" });
    }
    const refused = await this.refusedOf(asked, details.session.accountId);
    if (refused) {
      return this.provider.interactionFinished(
        req,
        res,
        {
          error: "access_denied",
          error_description: noAccessMessage([refused]),
        },
        { mergeWithLastSubmission: false },
      );
    }
    const grant = details.grantId
      ? ((await this.provider.Grant.find(details.grantId)) ??
        this.newGrant(details.session.accountId, String(details.params.client_id)))
      : this.newGrant(details.session.accountId, String(details.params.client_id));
    const missing = details.prompt.details as {
      missingOIDCScope?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
    for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(resource, scopes.join(" "));
    }
    const grantId = await grant.save();
    return this.provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  private newGrant(accountId: string, clientId: string) {
    return new this.provider.Grant({ accountId, clientId });
  }

  /** Bound to the interaction (itself bound to the browser by the authority's cookie): a form from elsewhere fails. */
  private csrf(uid: string): string {
    return createHmac("sha256", this.csrfKey).update(`csrf:${uid}`).digest("base64url");
  }

  private csrfMatches(uid: string, given: string | null): boolean {
    const expected = Buffer.from(this.csrf(uid));
    const actual = Buffer.from(given ?? "");
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  }
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > FORM_LIMIT) throw new PublicError("payload_too_large", "a sign-in form is at most 16 KiB");
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

const isLoopbackUrl = (url: string) => isLoopbackHost(new URL(url).hostname);

function sendHtml(res: ServerResponse, status: number, html: string) {
  res.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    // The pages are never framed (clickjacking) and load nothing from elsewhere.
    "x-frame-options": "DENY",
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  });
  res.end(html);
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { ...headers, "content-type": "application/json", "cache-control": "no-store" });
  res.end(JSON.stringify(body));
}
