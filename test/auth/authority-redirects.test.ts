import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { addUser } from "../../src/auth/users.ts";
import { dialects } from "../support/databases.ts";
import { Browser, REDIRECT, signInOnPages } from "../support/oauth-client.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

// Signing in hashes passwords (argon2id): slow on a loaded 2-core machine.
setDefaultTimeout(30_000);

const [sqlite] = dialects;
const password = "correct horse battery staple";
const verifier = "v".repeat(64);
const challenge = new Bun.CryptoHasher("sha256").update(verifier).digest("base64url");

describe("which redirect URIs a client may use (the built-in authority)", () => {
  let t: TestServer;

  beforeAll(async () => {
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("claims") });
    await addUser(t.store, "alice", password);
  });

  afterAll(async () => {
    await t?.stop();
  });

  const register = (metadata: Record<string, unknown>) =>
    fetch(`${t.url}/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token_endpoint_auth_method: "none", client_name: "Agent", ...metadata }),
    });

  const registered = async (redirects: string[]) => {
    const answer = await register({ redirect_uris: redirects });
    expect(answer.status).toBe(201);
    return ((await answer.json()) as { client_id: string }).client_id;
  };

  const authorizationUrl = (clientId: string, redirectUri: string) =>
    `${t.url}/oauth/authorize?${new URLSearchParams({
      response_type: "code",
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: "S256",
      resource: `${t.url}/mcp`,
      state: "s1",
    })}`;

  const exchange = (clientId: string, code: string, redirectUri: string) =>
    fetch(`${t.url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        redirect_uri: redirectUri,
        client_id: clientId,
        code_verifier: verifier,
        resource: `${t.url}/mcp`,
      }),
    });

  test("an app's own scheme (cursor://) is accepted without application_type, and the code is sent there", async () => {
    const callback = "cursor://anysphere.cursor-retrieval/oauth/user-actuate/callback";
    const clientId = await registered([callback]);
    const { done } = await signInOnPages(authorizationUrl(clientId, callback), "alice", password);
    const landed = done?.redirectedTo as URL;
    expect(`${landed.protocol}//${landed.host}${landed.pathname}`).toBe(callback);
    const code = landed.searchParams.get("code") as string;
    expect((await exchange(clientId, code, callback)).status).toBe(200);
    // Schemes a browser would run or read rather than hand to an app stay refused.
    for (const scheme of ["javascript:alert(1)", "data:text/html,x", "file:///etc/passwd"]) {
      expect((await register({ redirect_uris: [scheme] })).status).toBe(400);
    }
  });

  test("a loopback redirect URI matches on any port (RFC 8252 §7.3), not on another path", async () => {
    const clientId = await registered(["http://127.0.0.1:4711/callback"]);
    // The client listens on whatever port was free this time: REDIRECT's.
    const { done } = await signInOnPages(authorizationUrl(clientId, REDIRECT), "alice", password);
    const code = done?.redirectedTo?.searchParams.get("code") as string;
    expect(code).toBeTruthy();
    expect((await exchange(clientId, code, REDIRECT)).status).toBe(200);

    const elsewhere = await new Browser().visit(authorizationUrl(clientId, "http://127.0.0.1:9/other"));
    expect(elsewhere.status).toBe(400);
    expect(JSON.parse(elsewhere.html)).toMatchObject({ ok: false, error: "invalid_redirect_uri" });
  });

  test("a *.localhost redirect URI is loopback too (issue #41): accepted, matched exactly, the code sent there", async () => {
    const app = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (request) => new Response(request.url) });
    try {
      const callback = `http://app.localhost:${app.port}/cb`;
      const clientId = await registered([callback]);
      const { done } = await signInOnPages(authorizationUrl(clientId, callback), "alice", password);
      const landed = new URL(done?.html ?? "");
      expect(`${landed.origin}${landed.pathname}`).toBe(callback);
      const code = landed.searchParams.get("code") as string;
      expect((await exchange(clientId, code, callback)).status).toBe(200);
      // oidc-provider varies the port for localhost and IP literals only (RFC 8252 §7.3): this one is exact.
      const otherPort = await new Browser().visit(authorizationUrl(clientId, "http://app.localhost:9/cb"));
      expect(JSON.parse(otherPort.html)).toMatchObject({ ok: false, error: "invalid_redirect_uri" });
    } finally {
      app.stop(true);
    }
    for (const lookalike of ["http://app.localhost.evil.com/cb", "http://localhost.evil.com/cb"]) {
      const answer = await register({ redirect_uris: [lookalike] });
      expect(answer.status).toBe(400);
      expect(await answer.json()).toMatchObject({ ok: false, error: "invalid_redirect_uri" });
    }
  });

  test("a cleartext redirect URI on another host is refused, whatever the client says it is", async () => {
    for (const metadata of [
      { redirect_uris: ["http://agent.example.com/callback"] },
      { redirect_uris: ["http://agent.example.com/callback"], application_type: "web" },
      { redirect_uris: ["http://agent.example.com/callback"], application_type: "native" },
      { redirect_uris: ["https://agent.example.com/callback", "http://agent.example.com/callback"] },
    ]) {
      const answer = await register(metadata);
      expect(answer.status).toBe(400);
      expect(await answer.json()).toMatchObject({
        ok: false,
        error: "invalid_redirect_uri",
        message: expect.stringContaining("loopback"),
      });
    }
  });

  test("https redirect URIs (a web client) are accepted and matched exactly", async () => {
    const clientId = await registered(["https://agent.example.com/callback"]);
    const answer = await new Browser().visit(authorizationUrl(clientId, "https://agent.example.com/callback"));
    expect(answer.status).toBe(200);
    expect(answer.html).toContain("Sign in to");
    const other = await new Browser().visit(authorizationUrl(clientId, "https://agent.example.com/other"));
    expect(JSON.parse(other.html)).toMatchObject({ ok: false, error: "invalid_redirect_uri" });
  });

  test("a client metadata document follows the same rules: an app's own scheme yes, cleartext elsewhere no", async () => {
    const documents: Record<string, Record<string, unknown>> = {
      "/agent.json": { redirect_uris: ["cursor://agent/cb"] },
      "/cleartext.json": { redirect_uris: ["http://agent.example.com/cb"] },
      "/web.json": { redirect_uris: ["cursor://agent/cb"], application_type: "web" },
    };
    const site = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (request) =>
        Response.json({
          client_id: request.url,
          client_name: "Documented Agent",
          ...documents[new URL(request.url).pathname],
        }),
    });
    try {
      const documented = `http://127.0.0.1:${site.port}/agent.json`;
      const { done } = await signInOnPages(authorizationUrl(documented, "cursor://agent/cb"), "alice", password);
      expect(done?.redirectedTo?.searchParams.get("code")).toBeTruthy();
      // The environment is on loopback, so a document on any loopback name is read over http.
      const named = `http://agent.localhost:${site.port}/agent.json`;
      const fromName = await signInOnPages(authorizationUrl(named, "cursor://agent/cb"), "alice", password);
      expect(fromName.done?.redirectedTo?.searchParams.get("code")).toBeTruthy();

      const cleartext = `http://127.0.0.1:${site.port}/cleartext.json`;
      const refused = await new Browser().visit(authorizationUrl(cleartext, "http://agent.example.com/cb"));
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.html)).toMatchObject({ ok: false, error: "invalid_redirect_uri" });

      // A document that says it is a web client gets the web rules: no app scheme.
      const web = `http://127.0.0.1:${site.port}/web.json`;
      const webRefused = await new Browser().visit(authorizationUrl(web, "cursor://agent/cb"));
      expect(JSON.parse(webRefused.html)).toMatchObject({ ok: false, error: "invalid_redirect_uri" });
    } finally {
      site.stop(true);
    }
  });
});
