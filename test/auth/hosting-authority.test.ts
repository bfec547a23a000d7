import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { exportJWK, generateKeyPair, importJWK, SignJWT } from "jose";
import { Authenticator } from "../../src/auth/authenticator.ts";
import { authorityKeys, publicKeySet } from "../../src/auth/authority/keys.ts";
import { JwtVerifier } from "../../src/auth/jwt.ts";
import { environmentAccess, handleOfResource } from "../../src/auth/service-authority.ts";
import { GRANT_CLAIM, SignIns } from "../../src/auth/sign-ins.ts";
import { addUser } from "../../src/auth/users.ts";
import { ConfigError, loadConfig, serviceUrl } from "../../src/config.ts";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { LiveClient } from "../support/live-client.ts";
import {
  Browser,
  beginSignIn,
  csrfOf,
  formAction,
  type MemoryClientProvider,
  REDIRECT,
  signInOnPages,
  storeGrant,
} from "../support/oauth-client.ts";
import { eventually, fixture } from "../support/server.ts";

// Signing in hashes passwords (argon2id) several times a test: slow on a loaded 2-core machine.
setDefaultTimeout(60_000);

const password = "correct horse battery staple";
const PROD = "acme-prod";
const DEV = "acme-dev";
/** TOKEN_RECHECK_MS as by default: the bound within which a revoked grant is refused. */
const RECHECK_MS = 1_000;

const claimsOf = (token: string) =>
  JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString()) as Record<string, unknown>;

describe("which resources are environments of the service", () => {
  const service = serviceUrl("https://actuate.example.com:8443");
  test("exactly an environment's URL or its /mcp names it; any other scheme, port, path or host names none", () => {
    expect(handleOfResource(service, "https://acme-prod.actuate.example.com:8443")).toBe("acme-prod");
    expect(handleOfResource(service, "https://acme-prod.actuate.example.com:8443/mcp")).toBe("acme-prod");
    for (const resource of [
      "http://acme-prod.actuate.example.com:8443/mcp",
      "https://acme-prod.actuate.example.com/mcp",
      "https://acme-prod.actuate.example.com:8443/",
      "https://acme-prod.actuate.example.com:8443/mcp/",
      "https://acme-prod.actuate.example.com:8443/other",
      "https://actuate.example.com:8443/mcp",
      "https://a.b.actuate.example.com:8443/mcp",
      "https://acme-prod.actuate.example.com.evil.example:8443/mcp",
      "https://user@acme-prod.actuate.example.com:8443/mcp",
      "not a url",
    ]) {
      expect(handleOfResource(service, resource)).toBeNull();
    }
  });

  test("AUTH_AUDIENCE is refused in hosting mode: one audience would make one environment's tokens good in all", () => {
    const load = () =>
      loadConfig({ DATA_DIR: "/tmp/actuate-unused", SERVICE_URL: "https://actuate.example.com", AUTH_AUDIENCE: "x" });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow("AUTH_AUDIENCE: not in hosting mode");
  });
});

for (const dialect of dialects) {
  describe(`hosting mode: one authority for the service (${dialect.name})`, () => {
    let h: HostingServer;
    let prod: number;
    let dev: number;

    beforeAll(async () => {
      h = await startHostingServer(dialect, {
        environments: [
          { handle: PROD, organization: "acme", release: fixture("claims") },
          { handle: DEV, organization: "acme", release: fixture("claims") },
          { handle: "main", release: undefined },
          { handle: "globex-prod", organization: "globex", release: fixture("claims") },
        ],
      });
      await h.publish("main", fixture("claims"));
      prod = await h.id(PROD);
      dev = await h.id(DEV);
      for (const user of ["alice", "bob", "carol"]) await addUser(h.store, user, password);
      await h.store.control.grants.grant("alice", { environment: prod }, Date.now());
      await h.store.control.grants.grant("alice", { environment: dev }, Date.now());
      await h.store.control.grants.grant("carol", { environment: prod }, Date.now());
    });
    afterAll(async () => {
      await h?.stop();
    });

    /** An MCP client pointed at an environment's /mcp, signed in as `user` through the apex's pages. */
    async function signIn(handle: string, user: string): Promise<MemoryClientProvider> {
      const { provider, transport, authorizationUrl } = await beginSignIn(h.at(handle));
      const { done } = await signInOnPages(authorizationUrl.toString(), user, password);
      const code = done?.redirectedTo?.searchParams.get("code");
      if (!code) throw new Error(`${user} got no code for ${handle}`);
      await transport.finishAuth(code);
      return provider;
    }

    test("an environment's /mcp points at its metadata, which names the apex; the apex's metadata is the authority's", async () => {
      const refused = await h.fetch(PROD, "/mcp", {
        method: "POST",
        token: null,
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(refused.status).toBe(401);
      const challenge = refused.headers.get("www-authenticate") ?? "";
      const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1] as string;
      expect(metadataUrl).toBe(`${h.at(PROD)}/.well-known/oauth-protected-resource/mcp`);
      const resource = (await (await fetch(metadataUrl)).json()) as Record<string, unknown>;
      expect(resource).toMatchObject({
        resource: `${h.at(PROD)}/mcp`,
        authorization_servers: [h.serviceUrl],
        scopes_supported: ["mcp"],
      });
      const metadata = (await (await fetch(`${h.serviceUrl}/.well-known/oauth-authorization-server`)).json()) as Record<
        string,
        unknown
      >;
      expect(metadata).toMatchObject({
        issuer: h.serviceUrl,
        authorization_endpoint: `${h.serviceUrl}/oauth/authorize`,
        token_endpoint: `${h.serviceUrl}/oauth/token`,
        registration_endpoint: `${h.serviceUrl}/oauth/register`,
        code_challenge_methods_supported: ["S256"],
      });
      // The environment's host has no authority of its own: a JSON 404 that says where it is.
      for (const path of [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
        "/oauth/token",
      ]) {
        const res = await h.fetch(PROD, path, { token: null });
        expect(res.status).toBe(404);
        expect(await res.json()).toMatchObject({
          ok: false,
          error: "not_found",
          message: expect.stringContaining(h.serviceUrl),
        });
      }
    });

    test("a sign-in through the apex gives a token for one environment: it acts there over HTTP and /mcp, and is refused on another", async () => {
      const { provider, transport, authorizationUrl } = await beginSignIn(h.at(PROD));
      expect(authorizationUrl.origin).toBe(h.serviceUrl);
      expect(authorizationUrl.searchParams.get("resource")).toBe(`${h.at(PROD)}/mcp`);
      expect(authorizationUrl.searchParams.get("code_challenge_method")).toBe("S256");
      const { signIn: page, consent, done } = await signInOnPages(authorizationUrl.toString(), "alice", password);
      // The sign-in page names the service and the environment asked for; the consent page the environment.
      expect(page.html).toContain(`Sign in to ${new URL(h.serviceUrl).host}`);
      expect(page.html).toContain(PROD);
      expect(consent.status).toBe(200);
      expect(consent.html).toContain(`<strong>${PROD}</strong> as you`);
      const code = done?.redirectedTo?.searchParams.get("code");
      expect(code).toBeTruthy();
      await transport.finishAuth(code as string);

      const access = provider.saved?.access_token as string;
      expect(claimsOf(access)).toMatchObject({ iss: h.serviceUrl, aud: `${h.at(PROD)}/mcp`, sub: "alice" });
      const own = await h.invoke(PROD, "whoami.get", {}, { token: access });
      expect(own.status).toBe(200);
      expect((await own.json()).execution.output).toEqual({ kind: "user", id: "alice", role: null });
      const client = new Client({ name: "test-agent", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${h.at(PROD)}/mcp`), { authProvider: provider }));
      try {
        const result = (await client.callTool({ name: "whoami.get", arguments: {} })) as {
          structuredContent?: unknown;
        };
        expect(result.structuredContent).toEqual({ kind: "user", id: "alice", role: null });
      } finally {
        await client.close();
      }
      // alice may use acme-dev too, but this token is acme-prod's.
      for (const handle of [DEV, "main"]) {
        const other = await h.invoke(handle, "whoami.get", {}, { token: access });
        expect(other.status).toBe(401);
        expect(other.headers.get("www-authenticate")).toContain('error="invalid_token"');
        expect(await other.json()).toMatchObject({ ok: false, error: "unauthorized" });
      }
      // Refreshing keeps it acme-prod's.
      const refreshed = await fetch(`${h.serviceUrl}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "refresh_token",
          refresh_token: provider.saved?.refresh_token as string,
          client_id: (provider.client as { client_id: string }).client_id,
        }),
      });
      expect(refreshed.status).toBe(200);
      const again = (await refreshed.json()) as { access_token: string };
      expect(claimsOf(again.access_token)).toMatchObject({ aud: `${h.at(PROD)}/mcp` });
    });

    test("the person is the same ctx.auth.id in every environment, environment 1 (no organization) without a grant", async () => {
      const ids: unknown[] = [];
      for (const handle of [PROD, DEV, "main"]) {
        const provider = await signIn(handle, "alice");
        const res = await h.invoke(handle, "whoami.get", {}, { token: provider.saved?.access_token as string });
        expect(res.status).toBe(200);
        ids.push((await res.json()).execution.output.id);
      }
      expect(ids).toEqual(["alice", "alice", "alice"]);
      // Another instance of the service (the same SERVICE_URL), which never started the authority, takes the
      // token: the keys are the store's.
      const other = await h.another({ SERVICE_URL: h.serviceUrl });
      const provider = await signIn(PROD, "alice");
      const there = await other.invoke(PROD, "whoami.get", {}, { token: provider.saved?.access_token as string });
      expect(there.status).toBe(200);
      expect((await there.json()).execution.output.id).toBe("alice");
      // bob was granted nothing, and environment 1 needs no grant.
      const bob = await signIn("main", "bob");
      expect(claimsOf(bob.saved?.access_token as string).sub).toBe("bob");
    });

    test("a person without a grant is told so and the client gets access_denied; no token is issued", async () => {
      const { authorizationUrl } = await beginSignIn(h.at(PROD));
      const browser = new Browser();
      const page = await browser.visit(authorizationUrl.toString());
      const refused = await browser.visit(formAction(page.html, h.serviceUrl), {
        method: "POST",
        form: { csrf: csrfOf(page.html), user: "bob", password },
      });
      expect(refused.status).toBe(403);
      expect(refused.html).toContain(`No access to ${PROD}`);
      expect(refused.html).toContain("administrator of its organization");
      expect(refused.html).toContain('name="reason" value="no-access"');
      const back = await browser.visit(formAction(refused.html, h.serviceUrl), {
        method: "POST",
        form: { csrf: csrfOf(refused.html), reason: "no-access" },
      });
      expect(back.redirectedTo?.toString()).toStartWith(REDIRECT);
      expect(back.redirectedTo?.searchParams.get("error")).toBe("access_denied");
      expect(back.redirectedTo?.searchParams.get("error_description")).toStartWith(`no access to ${PROD}`);
      expect(back.redirectedTo?.searchParams.get("code")).toBeNull();
    });

    test("a consent given before is not reused once the grant is revoked: the pages refuse", async () => {
      await addUser(h.store, "erin", password);
      await h.store.control.grants.grant("erin", { environment: prod }, Date.now());
      // A web client: consent is remembered per browser session (native clients are asked every time).
      const registered = await fetch(`${h.serviceUrl}/oauth/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          redirect_uris: [REDIRECT],
          application_type: "web",
          token_endpoint_auth_method: "none",
          client_name: "Web App",
        }),
      });
      expect(registered.status).toBe(201);
      const { client_id } = (await registered.json()) as { client_id: string };
      const authorize = () => {
        const verifier = crypto.randomUUID() + crypto.randomUUID();
        const challenge = new Bun.CryptoHasher("sha256").update(verifier).digest("base64url");
        const url = new URL(`${h.serviceUrl}/oauth/authorize`);
        for (const [name, value] of Object.entries({
          client_id,
          redirect_uri: REDIRECT,
          response_type: "code",
          scope: "mcp",
          code_challenge: challenge,
          code_challenge_method: "S256",
          resource: `${h.at(PROD)}/mcp`,
        }))
          url.searchParams.set(name, value);
        return url.toString();
      };
      const browser = new Browser();
      const page = await browser.visit(authorize());
      const consent = await browser.visit(formAction(page.html, h.serviceUrl), {
        method: "POST",
        form: { csrf: csrfOf(page.html), user: "erin", password },
      });
      const first = await browser.visit(formAction(consent.html, h.serviceUrl), {
        method: "POST",
        form: { csrf: csrfOf(consent.html) },
      });
      expect(first.redirectedTo?.searchParams.get("code")).toBeTruthy();
      // Asked again in the same browser: no page, a code at once.
      expect((await browser.visit(authorize())).redirectedTo?.searchParams.get("code")).toBeTruthy();

      await h.store.control.grants.revoke("erin", { environment: prod }, Date.now());
      const refused = await browser.visit(authorize());
      expect(refused.redirectedTo).toBeUndefined();
      expect(refused.status).toBe(403);
      expect(refused.html).toContain(`No access to ${PROD}`);
      // A confirm posted anyway (the consent form of before) is access_denied, not a code.
      const forced = await browser.visit(formAction(refused.html, h.serviceUrl).replace(/abort$/, "confirm"), {
        method: "POST",
        form: { csrf: csrfOf(refused.html) },
      });
      expect(forced.redirectedTo?.searchParams.get("error")).toBe("access_denied");
      expect(forced.redirectedTo?.searchParams.get("code")).toBeNull();
    });

    test("the authority refuses a resource that is no environment of the service, and a request naming none", async () => {
      const { provider, authorizationUrl } = await beginSignIn(h.at(PROD));
      const clientId = (provider.client as { client_id: string }).client_id;
      for (const resource of [
        "http://evil.example/mcp",
        `${h.at("nowhere")}/mcp`,
        `${h.serviceUrl}/mcp`,
        `${h.at(PROD)}/other`,
        null,
      ]) {
        const url = new URL(authorizationUrl);
        if (resource === null) url.searchParams.delete("resource");
        else url.searchParams.set("resource", resource);
        expect(url.searchParams.get("client_id")).toBe(clientId);
        const visit = await new Browser().visit(url.toString());
        expect(visit.redirectedTo?.searchParams.get("error")).toBe("invalid_target");
      }
    });

    test("an environment's sign-ins are those for it: another organization's key neither sees nor ends them", async () => {
      await h.store.control.grants.grant("dora", { environment: prod }, Date.now());
      await addUser(h.store, "dora", password);
      await signIn(PROD, "dora");
      type Listed = { items: { id: string; user: string }[] };
      const listed = async (handle: string, token: string) =>
        ((await (await h.fetch(handle, "/sign-ins?user=dora", { token })).json()) as Listed).items;
      const acmeKey = await h.key({ environment: PROD });
      const [own] = await listed(PROD, acmeKey);
      expect(own?.user).toBe("dora");
      const globexKey = await h.key({ organization: "globex" });
      expect(await listed("globex-prod", globexKey)).toEqual([]);
      // Nor with the operator's key on another environment: the sign-in is acme-prod's.
      expect(await listed(DEV, h.serviceKey)).toEqual([]);
      const ended = await h.fetch("globex-prod", `/sign-ins/${own?.id}`, { method: "DELETE", token: globexKey });
      expect(ended.status).toBe(404);
      expect(await ended.json()).toMatchObject({ ok: false, error: "sign_in_not_found" });
      expect(await listed(PROD, acmeKey)).toHaveLength(1);
      const endedHere = await h.fetch(PROD, `/sign-ins/${own?.id}`, { method: "DELETE", token: acmeKey });
      expect(endedHere.status).toBe(200);
      expect(await listed(PROD, acmeKey)).toEqual([]);
    });

    test("a revoked grant is refused once TOKEN_RECHECK_MS has passed since the token was last vouched for (a clock)", async () => {
      await addUser(h.store, "hank", password);
      await h.store.control.grants.grant("hank", { environment: prod }, Date.now());
      const here = h.store.environment(prod);
      const keys = await authorityKeys(h.store.oauth, Date.now());
      const signIns = new SignIns({ store: here });
      const jwt = new JwtVerifier({
        issuer: () => h.serviceUrl,
        audiences: () => [h.at(PROD), `${h.at(PROD)}/mcp`],
        userClaim: "sub",
        refetchMs: 30_000,
        localKeys: async () => publicKeySet(keys),
        signInActive: (user, claims) => signIns.active(user, claims),
      });
      let clock = Date.now();
      const organization = (await h.store.control.environments.byId(prod))?.organization as number;
      const auth = new Authenticator(
        here,
        [],
        RECHECK_MS,
        jwt,
        () => clock,
        environmentAccess(here, prod, organization),
      );
      const token = await new SignJWT({ [GRANT_CLAIM]: await storeGrant(h.store, "hank") })
        .setProtectedHeader({ alg: "RS256", kid: keys.signing.kid })
        .setIssuer(h.serviceUrl)
        .setAudience(`${h.at(PROD)}/mcp`)
        .setSubject("hank")
        .setExpirationTime("1h")
        .sign(await importJWK(keys.signing, "RS256"));
      const vouchedAt = clock;
      expect(await auth.resolveToken(token)).toMatchObject({ kind: "user", id: "hank" });
      await h.store.control.grants.revoke("hank", { environment: prod }, Date.now());
      clock = vouchedAt + RECHECK_MS - 1;
      expect(await auth.resolveToken(token)).toMatchObject({ kind: "user", id: "hank" });
      clock = vouchedAt + RECHECK_MS;
      expect(await auth.resolveToken(token)).toBeNull();
      // A live socket's re-check asks the same.
      expect(await auth.stillValid([token])).toEqual(new Set());
      await h.store.control.grants.grant("hank", { organization }, Date.now());
      expect(await auth.stillValid([token])).toEqual(new Set([token]));
    });

    test("a user token needs a grant too; revoking a grant refuses the person's tokens within the bound and closes their live socket", async () => {
      const unGranted = await h.userToken(PROD, "bob", { grant: false });
      expect((await h.invoke(PROD, "whoami.get", {}, { token: unGranted })).status).toBe(401);

      const provider = await signIn(PROD, "carol");
      const access = provider.saved?.access_token as string;
      expect((await h.invoke(PROD, "whoami.get", {}, { token: access })).status).toBe(200);
      const live = await LiveClient.connect(h.at(PROD));
      try {
        live.send({ op: "init", "access-token": access, "client-event-id": "i" });
        expect(await live.op("init-ok")).toMatchObject({ "client-event-id": "i" });

        const revokedAt = Date.now();
        await h.store.control.grants.revoke("carol", { environment: prod }, revokedAt);
        const refused = (await eventually(async () => {
          const res = await h.invoke(PROD, "whoami.get", {}, { token: access });
          return res.status === 401 ? res : null;
        })) as Response;
        // Within TOKEN_RECHECK_MS of the revocation (and the time the last request took).
        expect(Date.now() - revokedAt).toBeLessThan(RECHECK_MS + 1_000);
        expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
        await live.whenClosed();
        expect(live.closed?.code).toBe(4001);
      } finally {
        live.close();
      }
      // Granted the organization, carol's sign-in stands again (the grant is checked, not the sign-in ended).
      const acme = (await h.store.control.organizations.byHandle("acme"))?.id as number;
      await h.store.control.grants.grant("carol", { organization: acme }, Date.now());
      await eventually(async () => (await h.invoke(PROD, "whoami.get", {}, { token: access })).status === 200);
      // The grant check does not move dev's refusal: the token is still acme-prod's.
      expect((await h.invoke(DEV, "whoami.get", {}, { token: access })).status).toBe(401);
    });
  });
}

for (const dialect of dialects) {
  describe(`hosting mode with AUTH_ISSUER: the identity provider is every environment's authority (${dialect.name})`, () => {
    let h: HostingServer;
    let idp: ReturnType<typeof Bun.serve>;
    let issuer: string;
    let sign: (audience: string, sub: string) => Promise<string>;

    beforeAll(async () => {
      const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
      const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256" };
      idp = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => Response.json({ keys: [jwk] }) });
      issuer = `http://127.0.0.1:${idp.port}`;
      sign = (audience, sub) =>
        new SignJWT({})
          .setProtectedHeader({ alg: "ES256", kid: "k1" })
          .setIssuer(issuer)
          .setAudience(audience)
          .setSubject(sub)
          .setExpirationTime("5m")
          .sign(privateKey);
      h = await startHostingServer(dialect, {
        environments: [
          { handle: PROD, organization: "acme", release: fixture("claims") },
          { handle: DEV, organization: "acme", release: fixture("claims") },
        ],
        env: { AUTH_ISSUER: issuer, AUTH_JWKS_URL: `${issuer}/keys` },
      });
    });
    afterAll(async () => {
      await h?.stop();
      idp?.stop(true);
    });

    test("the metadata names the provider, the apex has no authority, and its tokens need a grant and name the environment", async () => {
      const resource = (await (
        await h.fetch(PROD, "/.well-known/oauth-protected-resource/mcp", { token: null })
      ).json()) as {
        authorization_servers: string[];
      };
      expect(resource.authorization_servers).toEqual([issuer]);
      const apex = await h.fetch(null, "/.well-known/oauth-authorization-server", { token: null });
      expect(apex.status).toBe(404);
      expect(await apex.json()).toMatchObject({ ok: false, error: "not_found" });

      const token = await sign(h.at(PROD), "ivy");
      const refused = await h.invoke(PROD, "whoami.get", {}, { token });
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
      await h.store.control.grants.grant("ivy", { environment: await h.id(PROD) }, Date.now());
      const taken = await h.invoke(PROD, "whoami.get", {}, { token });
      expect(taken.status).toBe(200);
      expect((await taken.json()).execution.output).toMatchObject({ kind: "user", id: "ivy" });
      // Granted the whole organization, ivy's acme-prod token is still refused on acme-dev: its audience.
      const acme = (await h.store.control.organizations.byHandle("acme"))?.id as number;
      await h.store.control.grants.grant("ivy", { organization: acme }, Date.now());
      expect((await h.invoke(DEV, "whoami.get", {}, { token })).status).toBe(401);
      expect((await h.invoke(DEV, "whoami.get", {}, { token: await sign(`${h.at(DEV)}/mcp`, "ivy") })).status).toBe(
        200,
      );
    });
  });
}
