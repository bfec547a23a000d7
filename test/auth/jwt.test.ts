import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from "jose";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { dialects } from "../support/databases.ts";
import { LiveClient } from "../support/live-client.ts";
import { mcpClient } from "../support/mcp-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

/** An identity provider on loopback: OpenID metadata and a key set the test can rotate; it counts key-set reads. */
async function startIdentityProvider() {
  let keys: JWK[] = [];
  let keySetReads = 0;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request): Response {
      const { pathname } = new URL(request.url);
      if (pathname === "/.well-known/openid-configuration") {
        return Response.json({ issuer, jwks_uri: `${issuer}/keys` });
      }
      if (pathname === "/keys") {
        keySetReads++;
        return Response.json({ keys });
      }
      return new Response("not found", { status: 404 });
    },
  });
  const issuer: string = `http://127.0.0.1:${server.port}`;
  const newKey = async (kid: string, alg = "ES256") => {
    const pair = await generateKeyPair(alg, { extractable: true });
    return { kid, alg, privateKey: pair.privateKey, jwk: { ...(await exportJWK(pair.publicKey)), kid, alg } };
  };
  return {
    issuer,
    newKey,
    publish: (...jwks: JWK[]) => {
      keys = jwks;
    },
    keySetReads: () => keySetReads,
    stop: () => server.stop(true),
  };
}

type Key = Awaited<ReturnType<Awaited<ReturnType<typeof startIdentityProvider>>["newKey"]>>;

const sign = (key: Key, claims: JWTPayload, options: { issuer: string; audience: string; expiresIn?: string }) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid })
    .setIssuer(options.issuer)
    .setAudience(options.audience)
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? "5m")
    .sign(key.privateKey);

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

// JWTs touch no table: one database is enough.
const [sqlite] = dialects;

describe("JWTs of an identity provider (AUTH_ISSUER)", () => {
  let idp: Awaited<ReturnType<typeof startIdentityProvider>>;
  let t: TestServer;
  let key: Key;
  const token = (claims: JWTPayload, options: { audience?: string; issuer?: string; expiresIn?: string } = {}) =>
    sign(key, claims, { issuer: options.issuer ?? idp.issuer, audience: options.audience ?? t.url, ...options });
  const whoami = async (bearer: string) => t.invoke("whoami.get", {}, { token: bearer });
  const expectInvalidToken = async (bearer: string) => {
    const res = await whoami(bearer);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ ok: false, error: "unauthorized" });
    expect(res.headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${t.url}/.well-known/oauth-protected-resource/mcp", error="invalid_token"`,
    );
  };

  beforeAll(async () => {
    idp = await startIdentityProvider();
    key = await idp.newKey("k1");
    idp.publish(key.jwk);
    t = await startTestServer(sqlite as (typeof dialects)[number], {
      release: fixture("claims"),
      env: { AUTH_ISSUER: idp.issuer, AUTH_JWKS_REFETCH_MS: "300" },
    });
  });

  afterAll(async () => {
    await t?.stop();
    idp?.stop();
  });

  test("a valid token acts as the user its sub names, with its claims in ctx.auth; the record says so", async () => {
    const res = await whoami(await token({ sub: "alice", role: "admin" }));
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.execution.output).toEqual({ kind: "user", id: "alice", role: "admin" });
    expect(body.execution.principal).toEqual({ kind: "user", id: "alice" });
    // It is alice's execution: alice reads it with another token, bob does not.
    const again = await t.fetch(`/executions/${body.execution.id}`, { token: await token({ sub: "alice" }) });
    expect(again.status).toBe(200);
    const bob = await t.fetch(`/executions/${body.execution.id}`, { token: await token({ sub: "bob" }) });
    expect(bob.status).toBe(404);
  });

  test("the audience is this environment: its URL or its /mcp resource, nothing else (RFC 8707)", async () => {
    expect((await whoami(await token({ sub: "alice" }, { audience: `${t.url}/mcp` }))).status).toBe(200);
    await expectInvalidToken(await token({ sub: "alice" }, { audience: "https://other.example" }));
    await expectInvalidToken(await token({ sub: "alice" }, { audience: `${t.url}/elsewhere` }));
  });

  test("a wrong issuer, an expired token, a bad signature, alg none, HS256 or no sub: 401 invalid_token", async () => {
    await expectInvalidToken(await token({ sub: "alice" }, { issuer: "http://127.0.0.1:1" }));
    await expectInvalidToken(await token({ sub: "alice" }, { expiresIn: "-5m" }));

    const forger = await idp.newKey("k1");
    await expectInvalidToken(await sign(forger, { sub: "alice" }, { issuer: idp.issuer, audience: t.url }));

    const claims = { sub: "alice", iss: idp.issuer, aud: t.url, exp: Math.floor(Date.now() / 1000) + 300 };
    await expectInvalidToken(`${base64url({ alg: "none", kid: "k1" })}.${base64url(claims)}.`);
    const hmac = await new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256", kid: "k1" })
      .sign(new TextEncoder().encode("a-secret-anyone-could-guess-0123456789"));
    await expectInvalidToken(hmac);

    await expectInvalidToken(await token({ role: "admin" }));
    await expectInvalidToken(`${(await token({ sub: "alice" })).slice(0, -4)}AAAA`);
  });

  test("a rotated key is picked up; unknown key ids refetch the key set at most once per cooldown", async () => {
    const rotated = await idp.newKey("k2", "RS256");
    const unknown = await sign(rotated, { sub: "carol" }, { issuer: idp.issuer, audience: t.url });
    const readsBefore = idp.keySetReads();
    // Not published yet: refused, and twenty of them within the cooldown read the key set once at most.
    await Promise.all(Array.from({ length: 20 }, () => expectInvalidToken(unknown)));
    expect(idp.keySetReads() - readsBefore).toBeLessThanOrEqual(1);

    idp.publish(key.jwk, rotated.jwk);
    // Once the cooldown has passed, the next unknown kid refetches and finds it.
    await eventually(
      async () =>
        (await whoami(await sign(rotated, { sub: "carol" }, { issuer: idp.issuer, audience: t.url }))).status === 200,
    );
    expect((await whoami(await token({ sub: "alice" }))).status).toBe(200);
  });

  test("access rules read the verified claims", async () => {
    const admin = await t.invoke("admin.purge", {}, { token: await token({ sub: "alice", role: "admin" }) });
    expect(admin.status).toBe(200);
    const viewer = await t.invoke("admin.purge", {}, { token: await token({ sub: "bob", role: "viewer" }) });
    expect(viewer.status).toBe(403);
    expect(await viewer.json()).toMatchObject({ ok: false, error: "access_denied" });
  });

  test("a workflow run keeps the caller's claims: its steps, resumed after a sleep, see the same ctx.auth", async () => {
    const res = await t.invoke("reports.build", {}, { token: await token({ sub: "alice", role: "admin" }) });
    expect(res.status).toBe(202);
    const { execution } = await res.json();
    const result = await t.fetch(`/executions/${execution.id}/result`, { token: await token({ sub: "alice" }) });
    expect(await result.json()).toMatchObject({ status: "succeeded", output: { id: "alice", role: "admin" } });
  });

  test("service keys and our own user tokens keep working beside JWTs", async () => {
    expect((await whoami(t.serviceKey)).status).toBe(200);
    const own = await (await whoami(await t.userToken("dave"))).json();
    expect(own.execution.output).toEqual({ kind: "user", id: "dave", role: null });
  });

  test("over MCP the same token acts as the same user; a token for another audience is 401", async () => {
    const client = await mcpClient(t, await token({ sub: "alice", role: "admin" }));
    try {
      const result = (await client.callTool({ name: "whoami.get", arguments: {} })) as {
        structuredContent?: unknown;
      };
      expect(result.structuredContent).toEqual({ kind: "user", id: "alice", role: "admin" });
    } finally {
      await client.close();
    }
    const foreign = await fetch(`${t.url}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${await token({ sub: "alice" }, { audience: "https://other.example/mcp" })}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(foreign.status).toBe(401);
    expect(foreign.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  test("a live session opens with a JWT, and refuses one for another audience", async () => {
    const client = await LiveClient.connect(t.url);
    try {
      client.send({ op: "init", "access-token": await token({ sub: "alice" }, { audience: "https://other.example" }) });
      expect(await client.op("error")).toMatchObject({ status: 401 });
      client.send({ op: "init", "access-token": await token({ sub: "alice" }), "client-event-id": "i" });
      expect(await client.op("init-ok")).toMatchObject({ "client-event-id": "i" });
    } finally {
      client.close();
    }
  });
});

describe("AUTH_ISSUER configuration", () => {
  test("https, or plain http only for a loopback host", () => {
    expect(loadConfig({ AUTH_ISSUER: "https://id.example.com" }).authIssuer).toBe("https://id.example.com");
    expect(loadConfig({ AUTH_ISSUER: "http://127.0.0.1:9000" }).authIssuer).toBe("http://127.0.0.1:9000");
    expect(loadConfig({ AUTH_ISSUER: "http://localhost:9000/realm" }).authIssuer).toBe("http://localhost:9000/realm");
    expect(() => loadConfig({ AUTH_ISSUER: "http://id.example.com" })).toThrow(ConfigError);
    expect(() => loadConfig({ AUTH_ISSUER: "http://127.0.0.1.evil.example" })).toThrow(ConfigError);
    expect(loadConfig({ AUTH_ISSUER: "http://id.localhost:9000" }).authIssuer).toBe("http://id.localhost:9000");
    expect(() => loadConfig({ AUTH_ISSUER: "http://id.localhost.evil.example" })).toThrow(ConfigError);
    expect(() => loadConfig({ AUTH_JWKS_URL: "http://keys.example.com/jwks" })).toThrow(ConfigError);
  });
});
