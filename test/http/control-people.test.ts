import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { GRANT_CLAIM } from "../../src/auth/sign-ins.ts";
import { addUser } from "../../src/auth/users.ts";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { REDIRECT, signedInClient, signInOnPages } from "../support/oauth-client.ts";
import { eventually, fixture } from "../support/server.ts";

// Signing in hashes passwords (argon2id): slow on a loaded 2-core machine.
setDefaultTimeout(60_000);

const PASSWORD = "correct horse battery staple";
/** TOKEN_RECHECK_MS as by default: the bound within which a revoked grant counts. */
const RECHECK_MS = 1_000;

const base64url = (bytes: ArrayBuffer | Uint8Array) => Buffer.from(new Uint8Array(bytes)).toString("base64url");

/**
 * A person's token for the apex itself (resource = SERVICE_URL), as the apex's console gets it: a public
 * client registered at the apex, authorization code with PKCE S256 through the sign-in pages.
 */
async function apexToken(h: HostingServer, user: string): Promise<string> {
  const registered = await fetch(`${h.serviceUrl}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "Actuate console",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    }),
  });
  const { client_id: clientId } = (await registered.json()) as { client_id: string };
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  const authorize = new URL(`${h.serviceUrl}/oauth/authorize`);
  authorize.search = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT,
    scope: "mcp",
    state: "s",
    code_challenge: challenge,
    code_challenge_method: "S256",
    resource: h.serviceUrl,
  }).toString();
  const { consent, done } = await signInOnPages(authorize.toString(), user, PASSWORD);
  const code = done?.redirectedTo?.searchParams.get("code");
  if (!code) throw new Error(`${user} got no code for the apex (${consent.status}: ${consent.html.slice(0, 200)})`);
  const answer = await fetch(`${h.serviceUrl}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: verifier,
      resource: h.serviceUrl,
    }),
  });
  const body = (await answer.json()) as { access_token?: string };
  if (!body.access_token) throw new Error(`no token: ${JSON.stringify(body)}`);
  return body.access_token;
}

const claimsOf = (token: string) =>
  JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString()) as Record<string, unknown>;

for (const dialect of dialects) {
  // Issue #41 §1, §3: a person signs in once at the apex, whose console lists the environments granted to them.
  describe(`people at the apex: GET /environments lists what a person may open (${dialect.name})`, () => {
    let h: HostingServer;
    const tokens: Record<string, string> = {};

    beforeAll(async () => {
      h = await startHostingServer(dialect, {
        environments: [
          { handle: "acme-prod", organization: "acme", release: fixture("claims") },
          { handle: "acme-dev", organization: "acme" },
          { handle: "globex-prod", organization: "globex" },
        ],
      });
      await h.publish("main", fixture("claims"));
      for (const user of ["alice", "bob", "carol"]) await addUser(h.store, user, PASSWORD);
      // alice: one environment; bob: acme's every environment; carol: nothing (environment 1 is everyone's).
      await h.store.control.grants.grant("alice", { environment: await h.id("acme-prod") }, Date.now());
      const acme = (await h.store.control.organizations.byHandle("acme"))?.id as number;
      await h.store.control.grants.grant("bob", { organization: acme }, Date.now());
      for (const user of ["alice", "bob", "carol"]) tokens[user] = await apexToken(h, user);
    });
    afterAll(async () => {
      await h?.stop();
    });

    const listOf = async (token: string) => {
      const res = await h.fetch(null, "/environments", { token });
      expect(res.status).toBe(200);
      return ((await res.json()) as { items: { handle: string; url: string }[] }).items;
    };

    test("the token is the service's authority's, for the apex (aud SERVICE_URL), and needs no grant", () => {
      for (const user of ["alice", "bob", "carol"]) {
        expect(claimsOf(tokens[user] as string)).toMatchObject({ iss: h.serviceUrl, aud: h.serviceUrl, sub: user });
      }
    });

    test("each person lists exactly the environments granted to them (per environment, organization-wide), environment 1 for all, with their URLs", async () => {
      expect(await listOf(tokens.alice as string)).toEqual([
        expect.objectContaining({ handle: "acme-prod", url: h.at("acme-prod") }),
        expect.objectContaining({ handle: "main", url: h.at("main") }),
      ]);
      expect((await listOf(tokens.bob as string)).map((e) => e.handle)).toEqual(["acme-dev", "acme-prod", "main"]);
      expect((await listOf(tokens.carol as string)).map((e) => e.handle)).toEqual(["main"]);
      // The organization filter keeps the person's own; an unknown organization is an empty list, not a 404.
      const filtered = await h.fetch(null, "/environments?organization=acme", { token: tokens.bob });
      expect(((await filtered.json()) as { items: { handle: string }[] }).items.map((e) => e.handle)).toEqual([
        "acme-dev",
        "acme-prod",
      ]);
      const unknown = await h.fetch(null, "/environments?organization=nope", { token: tokens.bob });
      expect(await unknown.json()).toEqual({ items: [], nextCursor: null });
    });

    test("every other control route is 403 access_denied for a person, whatever it names", async () => {
      const routes: [string, string, unknown?][] = [
        ["GET", "/orgs"],
        ["POST", "/orgs", { handle: "mine" }],
        ["GET", "/orgs/acme"],
        ["GET", "/orgs/nope"],
        ["POST", "/environments", { handle: "mine", organization: "acme" }],
        ["GET", "/environments/acme-prod"],
        ["DELETE", "/environments/acme-prod?confirm=true"],
        ["GET", "/environments/acme-prod/keys"],
        ["POST", "/environments/acme-prod/keys"],
        ["DELETE", "/environments/acme-prod/keys/0190"],
        ["GET", "/environments/acme-prod/grants"],
        ["POST", "/environments/acme-prod/grants", { user: "bob" }],
        ["DELETE", "/environments/acme-prod/grants/alice"],
        ["GET", "/orgs/acme/keys"],
        ["POST", "/orgs/acme/keys"],
        ["GET", "/orgs/acme/grants"],
        ["POST", "/orgs/acme/grants", { user: "alice" }],
        ["DELETE", "/orgs/acme/grants/bob"],
        ["GET", "/environments/nope/grants"],
      ];
      for (const [method, path, body] of routes) {
        const res = await h.fetch(null, path, {
          method,
          token: tokens.bob,
          headers: body === undefined ? {} : { "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        expect({ method, path, status: res.status, error: ((await res.json()) as { error: string }).error }).toEqual({
          method,
          path,
          status: 403,
          error: "access_denied",
        });
      }
      // Nothing was made or taken away.
      expect(await h.store.control.organizations.byHandle("mine")).toBeNull();
      expect(await h.store.control.grants.mayUse("alice", await h.id("acme-prod"))).toBe(true);
    });

    test("the apex token is refused (401 invalid_token) on every environment's host, environment 1 included", async () => {
      for (const handle of ["acme-prod", "acme-dev", "globex-prod", "main"]) {
        const res = await h.fetch(handle, "/actions", { token: tokens.bob });
        expect(res.status).toBe(401);
        expect(res.headers.get("www-authenticate") ?? "").toContain('error="invalid_token"');
      }
      const invoked = await h.invoke("main", "whoami.get", {}, { token: tokens.carol });
      expect(invoked.status).toBe(401);
    });

    test("an environment's tokens stay 401 at the apex: its user token and its JWT (another audience)", async () => {
      const userToken = await h.userToken("acme-prod", "alice");
      const environmentJwt = (await signedInClient(h.at("acme-prod"), "alice", PASSWORD)).saved?.access_token as string;
      expect(claimsOf(environmentJwt).aud).toBe(`${h.at("acme-prod")}/mcp`);
      // Good where it is for.
      expect((await h.invoke("acme-prod", "whoami.get", {}, { token: environmentJwt })).status).toBe(200);
      for (const token of [userToken, environmentJwt, "not-a-token"]) {
        const res = await h.fetch(null, "/environments", { token });
        expect(res.status).toBe(401);
        expect(res.headers.get("www-authenticate") ?? "").toContain('error="invalid_token"');
      }
    });

    test("a grant revoked drops the environment from the person's list within the recheck bound; granted again, it is back", async () => {
      const prod = await h.id("acme-prod");
      const dana = "dana";
      await addUser(h.store, dana, PASSWORD);
      await h.store.control.grants.grant(dana, { environment: prod }, Date.now());
      const token = await apexToken(h, dana);
      expect((await listOf(token)).map((e) => e.handle)).toEqual(["acme-prod", "main"]);
      await h.store.control.grants.revoke(dana, { environment: prod }, Date.now());
      const revokedAt = Date.now();
      await eventually(async () => !(await listOf(token)).some((e) => e.handle === "acme-prod"), RECHECK_MS);
      expect(Date.now() - revokedAt).toBeLessThanOrEqual(RECHECK_MS + 500);
      // The person's sign-in at the apex stands: the same token lists again what is granted again.
      await h.store.control.grants.grant(dana, { environment: prod }, Date.now());
      expect((await listOf(token)).map((e) => e.handle)).toEqual(["acme-prod", "main"]);
    });

    test("the apex token ends with the person's sign-in: revoked, it is 401 within the recheck bound", async () => {
      await addUser(h.store, "erin", PASSWORD);
      const token = await apexToken(h, "erin");
      expect((await listOf(token)).map((e) => e.handle)).toEqual(["main"]);
      await h.store.oauth.revokeGrant(claimsOf(token)[GRANT_CLAIM] as string);
      await eventually(async () => (await h.fetch(null, "/environments", { token })).status === 401, RECHECK_MS + 500);
    });
  });
}
