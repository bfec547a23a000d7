import { type OAuthClientProvider, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import type { Store } from "../../src/store/store.ts";

export const REDIRECT = "http://127.0.0.1:9/callback";

/** What an MCP client keeps between runs, in memory; the authorization URL it would open is kept for the test. */
export class MemoryClientProvider implements OAuthClientProvider {
  constructor(private readonly name = "Test Agent") {}

  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = "";
  authorizationUrl?: URL;

  get redirectUrl() {
    return REDIRECT;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }

  clientInformation() {
    return this.client;
  }

  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }

  tokens() {
    return this.saved;
  }

  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }

  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }

  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }

  codeVerifier() {
    return this.verifier;
  }
}

/**
 * An MCP client's first connection to `${url}/mcp` without a token, as an agent starts: it is refused
 * (401), discovers the authority, registers, and would open the authorization URL it left in
 * `provider.authorizationUrl`; `transport.finishAuth(code)` completes it.
 */
export async function beginSignIn(url: string, clientName?: string) {
  const provider = new MemoryClientProvider(clientName);
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { authProvider: provider });
  const refused = await new Client({ name: "test-agent", version: "1.0.0" }).connect(transport).then(
    () => null,
    (error: unknown) => error,
  );
  if (!(refused instanceof UnauthorizedError) || !provider.authorizationUrl) {
    throw new Error(`the first connection was not sent to sign in: ${String(refused)}`);
  }
  return { provider, transport, authorizationUrl: provider.authorizationUrl };
}

export interface Visit {
  status: number;
  html: string;
  headers?: Headers;
  /** Where the browser left for the client (its redirect URI, with the code or an error), if it did. */
  redirectedTo?: URL;
}

/**
 * A person's browser: keeps cookies, follows redirects until it leaves for the client (REDIRECT, or
 * an app's own scheme such as cursor://, which no browser fetches).
 */
export class Browser {
  private readonly cookies = new Map<string, string>();

  async visit(
    url: string,
    init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
  ): Promise<Visit> {
    let next = url;
    let method = init.method ?? "GET";
    let body: string | undefined = init.form ? new URLSearchParams(init.form).toString() : undefined;
    for (let hop = 0; hop < 20; hop++) {
      if (next.startsWith(REDIRECT) || !/^https?:/.test(next))
        return { redirectedTo: new URL(next), status: 303, html: "" };
      const headers: Record<string, string> = {
        ...init.headers,
        cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; "),
      };
      if (body !== undefined) headers["content-type"] = "application/x-www-form-urlencoded";
      const res = await fetch(next, { method, headers, body, redirect: "manual" });
      for (const line of res.headers.getSetCookie()) {
        const [pair = ""] = line.split(";");
        const [name = "", ...value] = pair.split("=");
        this.cookies.set(name.trim(), value.join("="));
      }
      const location = res.headers.get("location");
      if (res.status >= 300 && res.status < 400 && location) {
        next = new URL(location, next).toString();
        method = "GET";
        body = undefined;
        continue;
      }
      return { status: res.status, html: await res.text(), headers: res.headers };
    }
    throw new Error("too many redirects");
  }
}

/** The URL a page's first form posts to. */
export const formAction = (html: string, base: string) => {
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1] ?? "";
  return new URL(action.replaceAll("&amp;", "&"), base).toString();
};
export const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";

/**
 * A person at a browser opens the authorization URL, signs in and allows the client. Each page on the
 * way is answered, so a test sees where it stopped: `consent` is the sign-in form again when the
 * sign-in was refused, and `done` is only there when the person got to allow the client.
 */
export async function signInOnPages(authorizationUrl: string, user: string, password: string) {
  const browser = new Browser();
  const signIn = await browser.visit(authorizationUrl);
  const consent = await browser.visit(formAction(signIn.html, authorizationUrl), {
    method: "POST",
    form: { csrf: csrfOf(signIn.html), user, password },
  });
  if (consent.status !== 200) return { signIn, consent };
  const done = await browser.visit(formAction(consent.html, authorizationUrl), {
    method: "POST",
    form: { csrf: csrfOf(consent.html) },
  });
  return { signIn, consent, done };
}

/**
 * An MCP client signed in as `user`: refused, sent to the sign-in page, the person signs in and allows
 * it, the client exchanges the code. Its provider then holds the client's registration and tokens.
 */
export async function signedInClient(url: string, user: string, password: string, clientName?: string) {
  const { provider, transport, authorizationUrl } = await beginSignIn(url, clientName);
  const { consent, done } = await signInOnPages(authorizationUrl.toString(), user, password);
  const code = done?.redirectedTo?.searchParams.get("code");
  if (!code) throw new Error(`the sign-in of ${user} gave no code (${consent.status})`);
  await transport.finishAuth(code);
  return provider;
}

/**
 * An agent's calls sent at once after its access token expired, each over a session of its own, all with
 * the agent's one refresh token (`provider`): every call is refused (401) and refreshes. One session each
 * because the MCP SDK's transport keeps a single "authorized, then refused" breaker for all its requests: a
 * 401 answered to a request sent before another's refresh finished trips it, and that call fails in the
 * client whatever the server does. Answers each call's outcome, in order.
 */
export async function callsAtOnceAfterExpiry(mcpUrl: string, provider: MemoryClientProvider, calls: number) {
  const clients = await Promise.all(
    Array.from({ length: calls }, async () => {
      const client = new Client({ name: "agent", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }));
      return client;
    }),
  );
  try {
    provider.saved = { ...(provider.saved as OAuthTokens), access_token: "expired", token_type: "Bearer" };
    return await Promise.allSettled(clients.map((client) => client.callTool({ name: "whoami.get", arguments: {} })));
  } finally {
    await Promise.all(clients.map((client) => client.close()));
  }
}

/**
 * A sign-in of `user` as the built-in authority stores it (a grant), for tests that mint its access
 * tokens themselves: a token is taken while the grant it names (GRANT_CLAIM) stands.
 */
export async function storeGrant(store: Store, user: string, id = `grant-${crypto.randomUUID()}`): Promise<string> {
  await store.oauth.upsert({
    model: "Grant",
    id,
    payload: { accountId: user, clientId: "test-client", iat: Math.floor(Date.now() / 1000) },
    grantId: null,
    accountId: user,
    uid: null,
    userCode: null,
    expiresAt: null,
    consumedAt: null,
  });
  return id;
}
