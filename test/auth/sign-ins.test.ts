import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { REFRESH_GRACE_MS, storeAdapter } from "../../src/auth/authority/adapter.ts";
import { GRANT_CLAIM } from "../../src/auth/sign-ins.ts";
import { hashSecret } from "../../src/auth/tokens.ts";
import { addUser } from "../../src/auth/users.ts";
import { openStore } from "../../src/store/open.ts";
import { cli } from "../support/cli.ts";
import { dialects, runStatement, selectRows } from "../support/databases.ts";
import { callsAtOnceAfterExpiry, type MemoryClientProvider, signedInClient } from "../support/oauth-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

// Signing in hashes a password (argon2id) per sign-in: slow on a loaded 2-core machine.
setDefaultTimeout(60_000);

const PASSWORD = "correct horse battery staple";

const clientIdOf = (provider: MemoryClientProvider) => (provider.client as { client_id: string }).client_id;
const tokensOf = (provider: MemoryClientProvider) => provider.saved as { access_token: string; refresh_token: string };
const claimsOf = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split(".")[1] as string, "base64url").toString()) as Record<string, unknown>;

const postForm = (url: string, fields: Record<string, string>) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
    body: new URLSearchParams(fields),
  });

/** A refresh as any client sends it (RFC 6749 §6). */
const refresh = (t: TestServer, provider: MemoryClientProvider, refreshToken: string) =>
  postForm(`${t.url}/oauth/token`, {
    grant_type: "refresh_token",
    refresh_token: refreshToken,
    client_id: clientIdOf(provider),
  });

const revoke = (t: TestServer, provider: MemoryClientProvider, token: string) =>
  postForm(`${t.url}/oauth/revoke`, { token, client_id: clientIdOf(provider) });

/** Whether an access token still acts (over HTTP, as any caller). */
const acts = async (t: TestServer, token: string) => (await t.invoke("whoami.get", {}, { token })).status === 200;

async function mcpClientOf(t: TestServer, provider: MemoryClientProvider) {
  const client = new Client({ name: "agent", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { authProvider: provider }));
  return client;
}

for (const dialect of dialects) {
  describe(`sign-ins of the built-in authority (${dialect.name})`, () => {
    let t: TestServer;

    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("claims") });
      for (const user of ["alice", "bob", "carol"]) await addUser(t.store, user, PASSWORD);
    }, 60_000);

    afterAll(async () => {
      await t?.stop();
    });

    test("an agent's three calls at once after its access token expired all go through; it stays signed in", async () => {
      const provider = await signedInClient(t.url, "alice", PASSWORD);
      const before = tokensOf(provider);
      // Each call is refused (401), and each refreshes with the one refresh token.
      const calls = await callsAtOnceAfterExpiry(`${t.url}/mcp`, provider, 3);
      expect(calls.map((c) => c.status)).toEqual(["fulfilled", "fulfilled", "fulfilled"]);
      for (const call of calls) {
        expect((call as PromiseFulfilledResult<{ structuredContent?: unknown }>).value.structuredContent).toEqual({
          kind: "user",
          id: "alice",
          role: null,
        });
      }
      const after = tokensOf(provider);
      expect(after.refresh_token).not.toBe(before.refresh_token);
      expect(claimsOf(after.access_token)[GRANT_CLAIM]).toBe(claimsOf(before.access_token)[GRANT_CLAIM]);
      // Signed in still: the refresh token the agent kept refreshes, and its access token acts.
      const client = await mcpClientOf(t, provider);
      try {
        provider.saved = { ...provider.saved, access_token: "expired", token_type: "Bearer" };
        expect(await auth(provider, { serverUrl: `${t.url}/mcp` })).toBe("AUTHORIZED");
        const result = (await client.callTool({ name: "whoami.get", arguments: {} })) as {
          structuredContent?: unknown;
        };
        expect(result.structuredContent).toEqual({ kind: "user", id: "alice", role: null });
      } finally {
        await client.close();
      }
    });

    test("within 30 s a used refresh token refreshes again from the same grant; past it, a reuse ends the sign-in", async () => {
      const provider = await signedInClient(t.url, "alice", PASSWORD);
      const first = tokensOf(provider);
      const answers = await Promise.all([1, 2].map(() => refresh(t, provider, first.refresh_token)));
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      const [a, b] = (await Promise.all(answers.map((a) => a.json()))) as {
        access_token: string;
        refresh_token: string;
      }[];
      if (!a || !b) throw new Error("two answers expected");
      expect(a.refresh_token).not.toBe(b.refresh_token);
      expect(claimsOf(a.access_token)[GRANT_CLAIM]).toBe(claimsOf(first.access_token)[GRANT_CLAIM]);
      expect(claimsOf(b.access_token)[GRANT_CLAIM]).toBe(claimsOf(first.access_token)[GRANT_CLAIM]);
      expect(await acts(t, a.access_token)).toBe(true);
      expect(await acts(t, b.access_token)).toBe(true);

      // The first use is more than 30 s ago (the stored time, which every instance reads, is moved back).
      await runStatement(
        t.config.databaseUrl,
        `update oauth_records set consumed_at = consumed_at - ${REFRESH_GRACE_MS + 1_000} where model = 'RefreshToken' and consumed_at is not null`,
      );
      const reused = await refresh(t, provider, first.refresh_token);
      expect(reused.status).toBe(400);
      expect(await reused.json()).toMatchObject({ ok: false, error: "invalid_grant" });
      // Reuse detection revoked the grant: its new refresh tokens and its access tokens with it.
      expect((await refresh(t, provider, a.refresh_token)).status).toBe(400);
      expect((await refresh(t, provider, b.refresh_token)).status).toBe(400);
      await eventually(async () => !(await acts(t, a.access_token)) && !(await acts(t, b.access_token)));
    });

    test("a sign-in outlives the browser session it was made in: its refresh token goes on after the session ends", async () => {
      const provider = await signedInClient(t.url, "bob", PASSWORD);
      // The person's browser session ended (it lasts 14 days; here its record is gone).
      await runStatement(t.config.databaseUrl, "delete from oauth_records where model = 'Session'");
      const answer = await refresh(t, provider, tokensOf(provider).refresh_token);
      expect(answer.status).toBe(200);
      expect(await acts(t, ((await answer.json()) as { access_token: string }).access_token)).toBe(true);
    });

    test("revoking a refresh token refuses the sign-in's access tokens within TOKEN_RECHECK_MS", async () => {
      const provider = await signedInClient(t.url, "alice", PASSWORD);
      const { access_token, refresh_token } = tokensOf(provider);
      expect(await acts(t, access_token)).toBe(true);
      expect((await revoke(t, provider, refresh_token)).status).toBe(200);
      await eventually(async () => !(await acts(t, access_token)));
      // Everywhere: /mcp and the live session refuse it too.
      const mcp = await fetch(`${t.url}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${access_token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(mcp.status).toBe(401);
      expect(mcp.headers.get("www-authenticate")).toContain('error="invalid_token"');
    });

    test("an access token revoked at /oauth/revoke ends its sign-in; only the client it was issued to may revoke it", async () => {
      const app = await signedInClient(t.url, "bob", PASSWORD, "Bob's Agent");
      const other = await signedInClient(t.url, "bob", PASSWORD, "Bob's Editor");
      const { access_token, refresh_token } = tokensOf(app);
      // Another client presenting it revokes nothing (and learns nothing: 200, as for any invalid token).
      const foreign = await revoke(t, other, access_token);
      expect(foreign.status).toBe(200);
      expect(await acts(t, access_token)).toBe(true);
      expect((await postForm(`${t.url}/oauth/revoke`, { token: "a.b.c", client_id: clientIdOf(app) })).status).toBe(
        200,
      );

      const revoked = await revoke(t, app, access_token);
      expect(revoked.status).toBe(200);
      await eventually(async () => !(await acts(t, access_token)));
      expect((await refresh(t, app, refresh_token)).status).toBe(400);
      // Bob's other app is signed in still.
      expect(await acts(t, tokensOf(other).access_token)).toBe(true);
      expect((await refresh(t, other, tokensOf(other).refresh_token)).status).toBe(200);
    });

    test("refresh tokens, codes and sessions are stored under a hash of their value, never in clear", async () => {
      const provider = await signedInClient(t.url, "carol", PASSWORD);
      const issued = tokensOf(provider).refresh_token;
      const answer = (await (await refresh(t, provider, issued)).json()) as { refresh_token: string };
      const rows = await selectRows(t.config.databaseUrl, "select model, id, payload from oauth_records");
      const table = JSON.stringify(rows);
      expect(table).not.toContain(issued);
      expect(table).not.toContain(answer.refresh_token);
      const ids = new Set(rows.map((r) => `${r.model}:${r.id}`));
      expect(ids.has(`RefreshToken:${hashSecret(issued)}`)).toBe(true);
      expect(ids.has(`RefreshToken:${hashSecret(answer.refresh_token)}`)).toBe(true);
      // No session or code is kept under its own value: every such id is a SHA-256.
      const secretModels = new Set(["AuthorizationCode", "RefreshToken", "Session", "RegistrationAccessToken"]);
      const kept = rows.filter((r) => secretModels.has(r.model as string));
      expect(new Set(kept.map((r) => r.model))).toEqual(secretModels);
      for (const row of kept) expect(row.id).toMatch(/^[0-9a-f]{64}$/);
    });

    test("GET /sign-ins lists the caller's signed-in apps; DELETE /sign-ins/{id} ends one; never another user's", async () => {
      const agent = await signedInClient(t.url, "carol", PASSWORD, "Carol's Agent");
      await signedInClient(t.url, "bob", PASSWORD, "Bob's Third");
      expect((await refresh(t, agent, tokensOf(agent).refresh_token)).status).toBe(200);
      const carol = await t.userToken("carol");

      expect((await t.fetch("/sign-ins", { token: null })).status).toBe(401);
      const listed = await t.fetch("/sign-ins", { token: carol });
      expect(listed.status).toBe(200);
      const { items } = await listed.json();
      expect(items.every((s: { user: string }) => s.user === "carol")).toBe(true);
      const mine = items.find((s: { client: { name: string } }) => s.client.name === "Carol's Agent");
      expect(mine).toMatchObject({
        id: claimsOf(tokensOf(agent).access_token)[GRANT_CLAIM],
        user: "carol",
        client: { id: clientIdOf(agent), name: "Carol's Agent" },
        signedInAt: expect.any(String),
        lastRefreshAt: expect.any(String),
        expiresAt: expect.any(String),
      });
      // Another user's are not hers to see or end.
      const asked = await t.fetch("/sign-ins?user=bob", { token: carol });
      expect(asked.status).toBe(403);
      expect(await asked.json()).toMatchObject({ ok: false, error: "access_denied" });
      const bobs = (await (await t.fetch("/sign-ins?user=bob")).json()).items as {
        id: string;
        client: { name: string };
      }[];
      expect(bobs.map((s) => s.client.name)).toContain("Bob's Third");
      const notHers = await t.fetch(`/sign-ins/${bobs[0]?.id}`, { method: "DELETE", token: carol });
      expect(notHers.status).toBe(404);
      expect(await notHers.json()).toMatchObject({ ok: false, error: "sign_in_not_found" });
      expect((await (await t.fetch("/sign-ins?user=bob")).json()).items).toHaveLength(bobs.length);
      // A service key sees everyone's.
      const everyone = (await (await t.fetch("/sign-ins")).json()).items as { user: string }[];
      expect(everyone.map((s) => s.user)).toEqual(expect.arrayContaining(["bob", "carol"]));

      const ended = await t.fetch(`/sign-ins/${mine.id}`, { method: "DELETE", token: carol });
      expect(ended.status).toBe(200);
      expect(await ended.json()).toMatchObject({ id: mine.id, client: { name: "Carol's Agent" } });
      await eventually(async () => !(await acts(t, tokensOf(agent).access_token)));
      expect((await refresh(t, agent, tokensOf(agent).refresh_token)).status).toBe(400);
      const left = (await (await t.fetch("/sign-ins", { token: carol })).json()).items as { id: string }[];
      expect(left.map((s) => s.id)).not.toContain(mine.id);
      expect((await t.fetch(`/sign-ins/${mine.id}`, { method: "DELETE", token: carol })).status).toBe(404);

      for (const [path, status] of [
        ["/sign-ins/not%20an%20id", 404],
        [`/sign-ins/${"x".repeat(300)}`, 404],
      ] as const) {
        const res = await t.fetch(path, { method: "DELETE" });
        expect(res.status).toBe(status);
        expect(await res.json()).toMatchObject({ ok: false, error: "sign_in_not_found" });
      }
      const malformed = await t.fetch("/sign-ins?user=%20bad&extra=1");
      expect(malformed.status).toBe(400);
      expect(await malformed.json()).toMatchObject({ ok: false, error: "invalid_request" });
    });

    test("bun run user sessions lists a person's apps; user revoke-session ends one by its id's first characters", async () => {
      const agent = await signedInClient(t.url, "alice", PASSWORD, "CLI Agent");
      const env = { DATABASE_URL: t.config.databaseUrl, DATA_DIR: t.config.dataDir };
      const grantId = claimsOf(tokensOf(agent).access_token)[GRANT_CLAIM] as string;
      const listed = await cli(["user", "sessions", "alice"], env);
      expect(listed.code).toBe(0);
      expect(listed.stdout).toMatch(/^SIGN-IN\s+APP\s+SIGNED IN\s+LAST REFRESH\s+EXPIRES/);
      expect(listed.stdout).toContain(`${grantId.slice(0, 12)}  CLI Agent`);
      expect((await cli(["user", "sessions", "nobody"], env)).stdout).toContain("nobody is signed in to no app");

      const short = await cli(["user", "revoke-session", grantId.slice(0, 5)], env);
      expect(short.code).toBe(1);
      expect(short.stderr).toContain("at least the first 12 characters");
      const unknown = await cli(["user", "revoke-session", "zzzzzzzzzzzzzzzz"], env);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain("no such sign-in");
      // An id may begin with "-" (one in 64 does): it is the sign-in, not a flag.
      const dashed = await cli(["user", "revoke-session", "-zzzzzzzzzzzzzzz"], env);
      expect(dashed).toMatchObject({ code: 1, stdout: "" });
      expect(dashed.stderr).toContain("no such sign-in");

      const revoked = await cli(["user", "revoke-session", grantId.slice(0, 12)], env);
      expect(revoked.code).toBe(0);
      expect(revoked.stdout).toContain(`revoked sign-in ${grantId.slice(0, 12)} (CLI Agent, user alice)`);
      await eventually(async () => !(await acts(t, tokensOf(agent).access_token)));
      expect((await cli(["user", "sessions", "alice"], env)).stdout).not.toContain("CLI Agent");
    });
  });

  describe(`the authority's storage adapter (${dialect.name})`, () => {
    test("a consumed refresh token reads as unused for 30 s from its first use, then as consumed", async () => {
      const database = await dialect.create();
      const store = await openStore(database.url);
      try {
        let clock = 5_000_000;
        const Adapter = storeAdapter(store.oauth, () => clock, false);
        const tokens = new Adapter("RefreshToken");
        await tokens.upsert("the-token", { jti: "the-token", grantId: "g1", iat: 5_000 }, 3600);
        const usedAt = clock;
        await tokens.consume("the-token");
        clock = usedAt + 10_000;
        // A second use within the window does not move the window.
        await tokens.consume("the-token");
        clock = usedAt + REFRESH_GRACE_MS - 1;
        expect(await tokens.find("the-token")).toEqual({ jti: "the-token", grantId: "g1", iat: 5_000 });
        clock = usedAt + REFRESH_GRACE_MS;
        expect((await tokens.find("the-token"))?.consumed).toBe(Math.floor(usedAt / 1000));
        // A code has no window: once used, used.
        const codes = new Adapter("AuthorizationCode");
        await codes.upsert("the-code", { jti: "the-code", grantId: "g1" }, 60);
        await codes.consume("the-code");
        expect((await codes.find("the-code"))?.consumed).toBe(Math.floor(clock / 1000));
        // Both are stored under a hash of their value, which the stored payload does not hold either.
        expect(await store.oauth.find("RefreshToken", "the-token", clock)).toBeNull();
        const stored = await store.oauth.find("RefreshToken", hashSecret("the-token"), clock);
        expect(JSON.stringify(stored)).not.toContain("the-token");
        // An interaction in progress names its session, but does not keep the session's id (its cookie).
        const interactions = new Adapter("Interaction");
        await interactions.upsert(
          "i1",
          { jti: "i1", session: { uid: "u1", accountId: "ann", cookie: "the-session" } },
          60,
        );
        expect(await interactions.find("i1")).toEqual({ jti: "i1", session: { uid: "u1", accountId: "ann" } });
      } finally {
        await store.close();
        await database.drop();
      }
    });
  });
}
