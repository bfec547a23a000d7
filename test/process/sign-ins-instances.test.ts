import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { GRANT_CLAIM } from "../../src/auth/sign-ins.ts";
import { addUser } from "../../src/auth/users.ts";
import { type RunningServer, startServer } from "../../src/main.ts";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { dialects } from "../support/databases.ts";
import { freePort, haproxyPath, type LoadBalancer, startHaproxy } from "../support/haproxy.ts";
import { callsAtOnceAfterExpiry, type MemoryClientProvider, signedInClient } from "../support/oauth-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

/**
 * Two instances on one PostgreSQL database behind a round-robin balancer, as a deployment runs them:
 * the sign-in, an agent's parallel refreshes and a revocation each reach both.
 */
const pg = dialects.find((d) => d.name === "postgres");
const PASSWORD = "correct horse battery staple";

const clientIdOf = (provider: MemoryClientProvider) => (provider.client as { client_id: string }).client_id;
const tokensOf = (provider: MemoryClientProvider) => provider.saved as { access_token: string; refresh_token: string };
const claimsOf = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split(".")[1] as string, "base64url").toString()) as Record<string, unknown>;

const acts = async (base: string, token: string) =>
  (
    await fetch(`${base}/actions/whoami.get/invoke`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ requestId: crypto.randomUUID(), input: {} }),
    })
  ).status === 200;

describe.skipIf(!pg || !haproxyPath)("sign-ins across two instances (postgres, HAProxy)", () => {
  let a: TestServer;
  let storeB: Store;
  let b: RunningServer;
  let lb: LoadBalancer;

  beforeAll(async () => {
    const lbPort = freePort();
    a = await startTestServer(pg as NonNullable<typeof pg>, {
      release: fixture("claims"),
      env: { PUBLIC_URL: `http://127.0.0.1:${lbPort}` },
    });
    storeB = await openStore(a.config.databaseUrl);
    b = await startServer(a.config, { store: storeB, log: () => {} });
    lb = await startHaproxy(
      lbPort,
      [a.url, b.url].map((url) => url.replace("http://", "")),
    );
    await addUser(a.store, "alice", PASSWORD);
  }, 60_000);

  afterAll(async () => {
    await lb?.stop();
    await b?.stop();
    await storeB?.close();
    await a?.stop();
  });

  test("an agent's parallel calls refresh on both instances at once, and it stays signed in; a revocation on one is refused by the other", async () => {
    const provider = await signedInClient(lb.url, "alice", PASSWORD);
    const calls = await callsAtOnceAfterExpiry(`${lb.url}/mcp`, provider, 4);
    expect(calls.map((c) => c.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "fulfilled"]);

    // One refresh token sent to each instance at once: both answer a pair of the same grant.
    const { refresh_token } = tokensOf(provider);
    const answers = await Promise.all(
      [a.url, b.url].map((base) =>
        fetch(`${base}/oauth/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ grant_type: "refresh_token", refresh_token, client_id: clientIdOf(provider) }),
        }),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual([200, 200]);
    const pairs = (await Promise.all(answers.map((r) => r.json()))) as { access_token: string }[];
    const grantId = claimsOf(tokensOf(provider).access_token)[GRANT_CLAIM];
    for (const pair of pairs) {
      expect(claimsOf(pair.access_token)[GRANT_CLAIM]).toBe(grantId);
      expect(await acts(a.url, pair.access_token)).toBe(true);
      expect(await acts(b.url, pair.access_token)).toBe(true);
    }
    expect(await auth(provider, { serverUrl: `${lb.url}/mcp` })).toBe("AUTHORIZED");

    // Alice ends the sign-in on A; B refuses its access tokens within TOKEN_RECHECK_MS.
    const alice = await a.userToken("alice");
    const ended = await fetch(`${a.url}/sign-ins/${grantId}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${alice}` },
    });
    expect(ended.status).toBe(200);
    await eventually(async () => {
      const refused = await Promise.all(pairs.map(async (pair) => !(await acts(b.url, pair.access_token))));
      return refused.every(Boolean) && !(await acts(b.url, tokensOf(provider).access_token));
    });
  }, 90_000);
});
