import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { isClientDocumentUrl } from "../../src/auth/authority/client-documents.ts";
import { addUser, disableUser } from "../../src/auth/users.ts";
import { cli } from "../support/cli.ts";
import { dialects } from "../support/databases.ts";
import { LiveClient } from "../support/live-client.ts";
import { Browser, beginSignIn, csrfOf, formAction, REDIRECT } from "../support/oauth-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

// Signing in hashes passwords (argon2id) several times a test: slow on a loaded 2-core machine.
setDefaultTimeout(30_000);

const [sqlite] = dialects;

describe("the environment as its own authority (no AUTH_ISSUER)", () => {
  let t: TestServer;
  const password = "correct horse battery staple";

  beforeAll(async () => {
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("claims") });
    await addUser(t.store, "alice", password);
    await addUser(t.store, "bob", password);
  });

  afterAll(async () => {
    await t?.stop();
  });

  /** Runs the whole sign-in as an MCP client does: discovery, registration, browser, code exchange. */
  async function signIn(user: string, secret: string) {
    const { provider, transport } = await beginSignIn(t.url);
    expect(provider.authorizationUrl?.searchParams.get("code_challenge_method")).toBe("S256");
    expect(provider.authorizationUrl?.searchParams.get("resource")).toBe(`${t.url}/mcp`);

    const browser = new Browser();
    const signInPage = await browser.visit((provider.authorizationUrl as URL).toString());
    expect(signInPage.status).toBe(200);
    expect(signInPage.html).toContain("Test Agent");
    expect(signInPage.html).toContain(`Sign in to ${t.config.handle}`);
    const consent = await browser.visit(formAction(signInPage.html, t.url), {
      method: "POST",
      form: { csrf: csrfOf(signInPage.html), user, password: secret },
    });
    if (consent.status !== 200 || !consent.html.includes("Allow")) return { provider, transport, consent };
    const done = await browser.visit(formAction(consent.html, t.url), {
      method: "POST",
      form: { csrf: csrfOf(consent.html) },
    });
    const code = done.redirectedTo?.searchParams.get("code");
    expect(code).toBeTruthy();
    await transport.finishAuth(code as string);
    return { provider, transport, consent };
  }

  test("the resource metadata names this environment as its authorization server, whose metadata follows RFC 8414", async () => {
    const resource = (await (await fetch(`${t.url}/.well-known/oauth-protected-resource/mcp`)).json()) as {
      authorization_servers: string[];
      scopes_supported: string[];
    };
    expect(resource.authorization_servers).toEqual([t.url]);
    expect(resource.scopes_supported).toEqual(["mcp"]);
    const metadata = (await (await fetch(`${t.url}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >;
    expect(metadata).toMatchObject({
      issuer: t.url,
      authorization_endpoint: `${t.url}/oauth/authorize`,
      token_endpoint: `${t.url}/oauth/token`,
      registration_endpoint: `${t.url}/oauth/register`,
      code_challenge_methods_supported: ["S256"],
      response_types_supported: ["code"],
      client_id_metadata_document_supported: true,
      revocation_endpoint: `${t.url}/oauth/revoke`,
    });
    expect(metadata.grant_types_supported).not.toContain("implicit");
  });

  test("malformed requests to the authority get JSON refusals with ok:false, never a 5xx or a page", async () => {
    const cases: [string, string, string | undefined, string][] = [
      ["POST", "/oauth/token", '{"bad":', "application/json"],
      ["POST", "/oauth/token", "grant_type=nonsense", "application/x-www-form-urlencoded"],
      ["POST", "/oauth/register", '{"bad":', "application/json"],
      ["POST", "/oauth/register", '{"redirect_uris":"not a list"}', "application/json"],
      ["GET", "/oauth/authorize", undefined, "text/plain"],
      ["GET", "/oauth/nowhere", undefined, "text/plain"],
      ["DELETE", "/oauth/token", undefined, "text/plain"],
      ["POST", "/oauth/revoke", "token=", "application/x-www-form-urlencoded"],
      ["GET", "/oauth/interaction/unknown", undefined, "text/plain"],
      ["POST", "/oauth/interaction/unknown/login", "user=a&password=b", "application/x-www-form-urlencoded"],
    ];
    for (const [method, path, body, contentType] of cases) {
      const res = await fetch(`${t.url}${path}`, { method, body, headers: { "content-type": contentType } });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.headers.get("content-type")).toStartWith("application/json");
      expect(await res.json()).toMatchObject({ ok: false, error: expect.any(String), message: expect.any(String) });
    }
  });

  test("a forged Host header does not move the authority's URLs", async () => {
    const forged = await fetch(`${t.url}/.well-known/oauth-authorization-server`, {
      headers: { host: "evil.example" },
    });
    const metadata = (await forged.json()) as { issuer: string; token_endpoint: string };
    expect(metadata.issuer).toBe(t.url);
    expect(metadata.token_endpoint).toBe(`${t.url}/oauth/token`);
  });

  test("a browser-based client (another origin) may read the metadata, register and exchange codes: CORS", async () => {
    const origin = "http://localhost:6274";
    const preflight = (path: string) =>
      fetch(`${t.url}${path}`, {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
      });
    const metadata = await fetch(`${t.url}/.well-known/oauth-authorization-server`, { headers: { origin } });
    expect(metadata.headers.get("access-control-allow-origin")).toBeTruthy();
    const registerAsked = await preflight("/oauth/register");
    expect(registerAsked.status).toBe(204);
    expect(registerAsked.headers.get("access-control-allow-origin")).toBe("*");
    const registered = await fetch(`${t.url}/oauth/register`, {
      method: "POST",
      headers: { origin, "content-type": "application/json" },
      body: JSON.stringify({
        redirect_uris: [`${origin}/oauth/callback`],
        token_endpoint_auth_method: "none",
        client_name: "Inspector",
      }),
    });
    expect(registered.status).toBe(201);
    expect(registered.headers.get("access-control-allow-origin")).toBe("*");
    // The token endpoint answers the origin of a public client's redirect URI.
    const tokenAsked = await preflight("/oauth/token");
    expect(tokenAsked.headers.get("access-control-allow-origin")).toBe(origin);
  });

  test("an MCP client signs alice in with a browser; its tool calls then act as alice; a refresh rotates", async () => {
    const { provider } = await signIn("alice", password);
    const client = new Client({ name: "test-agent", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { authProvider: provider }));
    try {
      const result = (await client.callTool({ name: "whoami.get", arguments: {} })) as { structuredContent?: unknown };
      expect(result.structuredContent).toEqual({ kind: "user", id: "alice", role: null });
    } finally {
      await client.close();
    }
    // The token acts over plain HTTP too, and its audience is this environment's /mcp resource.
    const access = provider.saved?.access_token as string;
    const payload = JSON.parse(Buffer.from(access.split(".")[1] as string, "base64url").toString());
    expect(payload).toMatchObject({ iss: t.url, aud: `${t.url}/mcp`, sub: "alice" });
    expect((await t.invoke("whoami.get", {}, { token: access })).status).toBe(200);
    // And on a live session.
    const live = await LiveClient.connect(t.url);
    try {
      live.send({ op: "init", "access-token": access, "client-event-id": "i" });
      expect(await live.op("init-ok")).toMatchObject({ "client-event-id": "i" });
    } finally {
      live.close();
    }
    // The sign-in is listed beside the user tokens, by client and person.
    const env = { DATABASE_URL: t.config.databaseUrl, DATA_DIR: t.config.dataDir };
    expect((await cli(["token", "list"], env)).stdout).toMatch(/\nTest Agent\s+alice\s+\S+Z\s+\S+Z/);

    const first = provider.saved?.refresh_token as string;
    expect(first).toBeTruthy();
    await auth(provider, { serverUrl: `${t.url}/mcp` });
    const second = provider.saved?.refresh_token as string;
    expect(second).toBeTruthy();
    expect(second).not.toBe(first);
    // Revoking the current refresh token (RFC 7009) ends it too.
    const revoke = await fetch(`${t.url}/oauth/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: second, client_id: (provider.client as { client_id: string }).client_id }),
    });
    expect(revoke.status).toBe(200);
    const afterRevoke = await fetch(`${t.url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: second,
        client_id: (provider.client as { client_id: string }).client_id,
      }),
    });
    expect(afterRevoke.status).toBe(400);
    // The old refresh token was rotated away.
    const reuse = await fetch(`${t.url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: first,
        client_id: (provider.client as { client_id: string }).client_id,
      }),
    });
    expect(reuse.status).toBe(400);
  });

  test("a wrong password shows the form again with an error; nothing is issued", async () => {
    const { consent } = await signIn("alice", "not the password");
    expect(consent.status).toBe(401);
    expect(consent.html).toContain("Wrong user or password");
  });

  test("a disabled user's tokens stop working", async () => {
    const { provider } = await signIn("bob", password);
    const access = provider.saved?.access_token as string;
    expect((await t.invoke("whoami.get", {}, { token: access })).status).toBe(200);
    await disableUser(t.store, "bob");
    // Refused within TOKEN_RECHECK_MS (1 s), as any revocation.
    await eventually(async () => (await t.invoke("whoami.get", {}, { token: access })).status === 401);
    expect((await t.store.oauth.grants(Date.now())).some((g) => g.accountId === "bob")).toBe(false);
    // Nor can its client get new ones.
    await expect(auth(provider, { serverUrl: `${t.url}/mcp` })).rejects.toThrow();
  });

  test("a client may name itself by its metadata document's URL instead of registering", async () => {
    let fetched = 0;
    const site = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(request) {
        fetched++;
        const id = request.url;
        if (new URL(id).pathname === "/liar.json")
          return Response.json({ client_id: "https://elsewhere.example/x", redirect_uris: [REDIRECT] });
        return Response.json({ client_id: id, client_name: "Documented Agent", redirect_uris: [REDIRECT] });
      },
    });
    try {
      const clientId = `http://127.0.0.1:${site.port}/agent.json`;
      const verifier = "v".repeat(64);
      const challenge = new Bun.CryptoHasher("sha256").update(verifier).digest("base64url");
      const authorize = (id: string) =>
        `${t.url}/oauth/authorize?${new URLSearchParams({
          response_type: "code",
          client_id: id,
          redirect_uri: REDIRECT,
          code_challenge: challenge,
          code_challenge_method: "S256",
          resource: `${t.url}/mcp`,
          state: "s1",
        })}`;
      const browser = new Browser();
      const signInPage = await browser.visit(authorize(clientId));
      expect(signInPage.html).toContain("Documented Agent");
      const consent = await browser.visit(formAction(signInPage.html, t.url), {
        method: "POST",
        form: { csrf: csrfOf(signInPage.html), user: "alice", password },
      });
      const done = await browser.visit(formAction(consent.html, t.url), {
        method: "POST",
        form: { csrf: csrfOf(consent.html) },
      });
      const code = done.redirectedTo?.searchParams.get("code") as string;
      const tokens = await fetch(`${t.url}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code,
          redirect_uri: REDIRECT,
          client_id: clientId,
          code_verifier: verifier,
          resource: `${t.url}/mcp`,
        }),
      });
      expect(tokens.status).toBe(200);
      const { access_token } = (await tokens.json()) as { access_token: string };
      const who = await (await t.invoke("whoami.get", {}, { token: access_token })).json();
      expect(who.execution.output).toEqual({ kind: "user", id: "alice", role: null });
      // The document was read once for the whole flow (kept for an hour, for every instance).
      expect(fetched).toBe(1);

      // A document that names another client id is no client at all.
      const liar = await new Browser().visit(authorize(`http://127.0.0.1:${site.port}/liar.json`));
      expect(liar.status).toBe(400);
      expect(liar.html).toContain("invalid_client");
    } finally {
      site.stop(true);
    }
  });

  test("tokens only for this environment: an authorization request for another resource is refused", async () => {
    const { authorizationUrl } = await beginSignIn(t.url);
    const foreign = new URL(authorizationUrl);
    foreign.searchParams.set("resource", "https://other.example/mcp");
    const answer = await new Browser().visit(foreign.toString());
    expect(answer.redirectedTo?.searchParams.get("error")).toBe("invalid_target");
  });
});

describe("the sign-in page under guessing", () => {
  // Eleven password hashes: seconds on a loaded 2-core machine, past bun's 5 s default at times.
  test("after 10 failures within 15 minutes a user (and the address) is refused with 429, even the right password", async () => {
    const t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("claims") });
    try {
      await addUser(t.store, "carol", "the right password!");
      const { authorizationUrl } = await beginSignIn(t.url);
      const browser = new Browser();
      let page = await browser.visit(authorizationUrl.toString());
      for (let attempt = 0; attempt < 10; attempt++) {
        page = await browser.visit(formAction(page.html, t.url), {
          method: "POST",
          form: { csrf: csrfOf(page.html), user: "carol", password: `wrong ${attempt}` },
        });
        expect(page.status).toBe(401);
      }
      const blocked = await browser.visit(formAction(page.html, t.url), {
        method: "POST",
        form: { csrf: csrfOf(page.html), user: "carol", password: "the right password!" },
      });
      expect(blocked.status).toBe(429);
      expect(blocked.html).toContain("Too many failed sign-ins");
      // A form without the page's CSRF token is refused before any password is checked.
      const forged = await browser.visit(formAction(page.html, t.url), {
        method: "POST",
        form: { csrf: "forged", user: "carol", password: "the right password!" },
      });
      expect(forged.status).toBe(403);
    } finally {
      await t.stop();
    }
  }, 30_000);
});

describe("client metadata document URLs", () => {
  test("https with a path; plain http only on loopback in development; no private hosts, fragments or queries", () => {
    expect(isClientDocumentUrl("https://agent.example/client.json", false)).toBe(true);
    expect(isClientDocumentUrl("https://agent.example/", false)).toBe(false);
    expect(isClientDocumentUrl("https://agent.example/c.json#x", false)).toBe(false);
    expect(isClientDocumentUrl("https://agent.example/c.json?a=1", false)).toBe(false);
    expect(isClientDocumentUrl("https://user:pw@agent.example/c.json", false)).toBe(false);
    expect(isClientDocumentUrl("http://agent.example/c.json", true)).toBe(false);
    expect(isClientDocumentUrl("http://127.0.0.1:9/c.json", true)).toBe(true);
    expect(isClientDocumentUrl("http://127.0.0.1:9/c.json", false)).toBe(false);
    for (const host of [
      "10.0.0.5",
      "192.168.1.1",
      "172.16.0.1",
      "169.254.169.254",
      "127.0.0.1",
      "localhost",
      "[::1]",
      "[fd00::1]",
    ]) {
      expect(isClientDocumentUrl(`https://${host}/c.json`, true)).toBe(false);
    }
    expect(isClientDocumentUrl("a-registered-client-id", true)).toBe(false);
  });
});
