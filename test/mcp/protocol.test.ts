import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dialects } from "../support/databases.ts";
import { mcpClient } from "../support/mcp-client.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

const ACCEPT = "application/json, text/event-stream";
const [sqlite] = dialects;

describe("MCP over raw HTTP", () => {
  let t: TestServer;
  const post = (body: unknown, headers: Record<string, string> = {}, token?: string | null) =>
    t.fetch("/mcp", {
      method: "POST",
      headers: { "content-type": "application/json", accept: ACCEPT, ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
      token,
    });

  beforeAll(async () => {
    if (!sqlite) throw new Error("no dialect");
    t = await startTestServer(sqlite, {
      release: fixture("basic"),
      env: { AUTH_ISSUER: "https://auth.example.com", ALLOWED_ORIGINS: "https://app.example.com" },
    });
  });
  afterAll(() => t.stop());

  test("any method works without a prior initialize, answered as one JSON body with no session id", async () => {
    for (const method of ["tools/list", "resources/list", "resources/templates/list", "ping"]) {
      const res = await post({ jsonrpc: "2.0", id: 7, method }, { "mcp-protocol-version": "2025-11-25" });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toStartWith("application/json");
      expect(res.headers.get("mcp-session-id")).toBeNull();
      const body = await res.json();
      expect(body).toMatchObject({ jsonrpc: "2.0", id: 7 });
      expect(body.result).toBeDefined();
    }
    const init = await post({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
    });
    expect((await init.json()).result.protocolVersion).toBe("2025-06-18");
    expect(init.headers.get("mcp-session-id")).toBeNull();
  });

  test("a notification gets 202 with no body", async () => {
    const res = await post({ jsonrpc: "2.0", method: "notifications/initialized" });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("");
  });

  test("a batch is 400 with JSON-RPC error -32600; a body that is not JSON is -32700", async () => {
    const batch = await post([{ jsonrpc: "2.0", id: 1, method: "ping" }]);
    expect(batch.status).toBe(400);
    expect(await batch.json()).toMatchObject({ ok: false, error: { code: -32600 } });
    const broken = await post("{nope");
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ ok: false, error: { code: -32700 } });
  });

  test("an unsupported MCP-Protocol-Version is 400", async () => {
    const res = await post({ jsonrpc: "2.0", id: 1, method: "tools/list" }, { "mcp-protocol-version": "1999-01-01" });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ ok: false, error: { code: expect.any(Number) } });
  });

  test("a tools/call gets the same checks as any message: version 400, Accept 406, Content-Type 415, bad params an error", async () => {
    const call = {
      jsonrpc: "2.0",
      id: 3,
      method: "tools/call",
      params: { name: "test.echo", arguments: { text: "x" } },
    };
    expect((await post(call, { "mcp-protocol-version": "1999-01-01" })).status).toBe(400);
    expect((await post(call, { accept: "application/json" })).status).toBe(406);
    expect((await post(call, { "content-type": "text/plain" })).status).toBe(415);
    const ok = await post(call, { "mcp-protocol-version": "2025-11-25" });
    expect(await ok.json()).toMatchObject({ jsonrpc: "2.0", id: 3, result: { structuredContent: { text: "x" } } });
  });

  test("malformed params are -32602 saying what is wrong, for tools/call, resources/read and initialize", async () => {
    const malformed: [string, unknown, string][] = [
      ["tools/call", undefined, "Invalid params: name must be a string"],
      ["tools/call", 5, "Invalid params: params must be an object"],
      ["tools/call", { arguments: {} }, "Invalid params: name must be a string"],
      ["tools/call", { name: 5 }, "Invalid params: name must be a string"],
      ["tools/call", { name: "test.echo", _meta: "x" }, "Invalid params: _meta must be an object"],
      ["resources/read", {}, "Invalid params: uri must be a string"],
    ];
    for (const [method, params, message] of malformed) {
      const res = await post({ jsonrpc: "2.0", id: 4, method, params }, { "mcp-protocol-version": "2025-11-25" });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ jsonrpc: "2.0", id: 4, error: { code: -32602, message } });
    }
    // initialize is the SDK's: its schema's first issue, named by its path.
    const initialize = await post({ jsonrpc: "2.0", id: 5, method: "initialize", params: { capabilities: {} } });
    expect(await initialize.json()).toEqual({
      jsonrpc: "2.0",
      id: 5,
      error: { code: -32602, message: expect.stringMatching(/^Invalid params: params\.protocolVersion: \S/) },
    });
  });

  test("JSON-RPC errors carry their plain message (no SDK prefix), so a client shows it once", async () => {
    const legacy = { "mcp-protocol-version": "2025-11-25" };
    const unknownTool = await post({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "nope.x" } }, legacy);
    expect(await unknownTool.json()).toEqual({
      jsonrpc: "2.0",
      id: 5,
      error: { code: -32602, message: "Unknown tool: nope.x" },
    });
    const uri = "service://local/nothing";
    const unknownResource = await post({ jsonrpc: "2.0", id: 6, method: "resources/read", params: { uri } }, legacy);
    expect(await unknownResource.json()).toEqual({
      jsonrpc: "2.0",
      id: 6,
      error: { code: -32002, message: `Resource not found: ${uri}`, data: { uri } },
    });
    const client = await mcpClient(t, t.serviceKey);
    try {
      await expect(client.callTool({ name: "nope.x", arguments: {} })).rejects.toMatchObject({
        code: -32602,
        message: "MCP error -32602: Unknown tool: nope.x",
      });
    } finally {
      await client.close();
    }
  });

  test("GET and DELETE are 405 with Allow: POST (no stream is ever opened)", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await t.fetch("/mcp", { method, headers: { accept: "text/event-stream" } });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
      expect(await res.json()).toMatchObject({ ok: false });
    }
  });

  test("a foreign Origin or Host is 403; same-origin and ALLOWED_ORIGINS pass", async () => {
    const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
    expect((await post(ping, { origin: "https://evil.example" })).status).toBe(403);
    expect((await post(ping, { origin: "null" })).status).toBe(403);
    expect((await post(ping, { origin: "https://app.example.com" })).status).toBe(200);
    expect((await post(ping, { origin: t.url })).status).toBe(200);
    const rebound = await fetch(`${t.url}/mcp`, {
      method: "POST",
      headers: {
        host: "evil.example",
        "content-type": "application/json",
        accept: ACCEPT,
        authorization: `Bearer ${t.serviceKey}`,
      },
      body: JSON.stringify(ping),
    });
    expect(rebound.status).toBe(403);
  });

  test("no or a bad credential is 401 pointing at the resource metadata; a query-string token is ignored", async () => {
    const metadata = `Bearer resource_metadata="${t.url}/.well-known/oauth-protected-resource/mcp"`;
    for (const token of [null, "wrong"]) {
      const res = await post({ jsonrpc: "2.0", id: 1, method: "tools/list" }, {}, token);
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe(token ? `${metadata}, error="invalid_token"` : metadata);
      expect(await res.json()).toMatchObject({ ok: false, error: "unauthorized" });
    }
    const viaQuery = await fetch(`${t.url}/mcp?access_token=${t.serviceKey}`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: ACCEPT },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(viaQuery.status).toBe(401);
  });

  test("protected-resource metadata (RFC 9728) at the path-inserted and root URLs, without a credential", async () => {
    for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
      const res = await fetch(`${t.url}${path}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        resource: `${t.url}/mcp`,
        authorization_servers: ["https://auth.example.com"],
        bearer_methods_supported: ["header"],
        scopes_supported: [],
        resource_name: "Actuate environment local",
      });
    }
  });
});

describe("MCP without AUTH_ISSUER", () => {
  test("the metadata names the environment itself as the authorization server (the built-in authority)", async () => {
    if (!sqlite) throw new Error("no dialect");
    const t = await startTestServer(sqlite);
    try {
      const body = await (await t.fetch("/.well-known/oauth-protected-resource/mcp", { token: null })).json();
      expect(body.authorization_servers).toEqual([t.url]);
      expect(body.resource).toBe(`${t.url}/mcp`);
    } finally {
      await t.stop();
    }
  });
});
