import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dialects } from "../support/databases.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

// `*.localhost` is this machine (RFC 6761 §6.3; Bun's fetch, curl and browsers resolve it to loopback), so
// a server bound to loopback answers `http://env.localhost:<port>/mcp` as it answers `localhost` (issue #41 §1).

const ACCEPT = "application/json, text/event-stream";
const ping = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
const [sqlite] = dialects;

describe("the /mcp Host and Origin guard on *.localhost", () => {
  let t: TestServer;
  let port: string;
  beforeAll(async () => {
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("basic") });
    port = new URL(t.url).port;
  });
  afterAll(() => t?.stop());

  const post = (url: string, headers: Record<string, string> = {}) =>
    fetch(`${url}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: ACCEPT,
        authorization: `Bearer ${t.serviceKey}`,
        ...headers,
      },
      body: ping,
    });

  test("a request to http://env.localhost:<port> passes, with or without its own Origin, as localhost does", async () => {
    for (const host of ["localhost", "env.localhost", "a.b.localhost"]) {
      const url = `http://${host}:${port}`;
      expect((await post(url)).status).toBe(200);
      expect((await post(url, { origin: url })).status).toBe(200);
    }
  });

  test("another *.localhost origin is not same-origin; a name that only starts with localhost is not loopback", async () => {
    const other = await post(`http://env.localhost:${port}`, { origin: `http://other.localhost:${port}` });
    expect(other.status).toBe(403);
    expect(await other.json()).toMatchObject({ ok: false, error: { message: expect.stringContaining("origin") } });
    for (const host of ["localhost.evil.com", "env.localhost.evil.com", "evil-localhost"]) {
      const rebound = await post(t.url, { host: `${host}:${port}` });
      expect(rebound.status).toBe(403);
    }
  });
});
