import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { openGate } from "../fixtures/releases/basic/lib/probe.ts";
import { dialects } from "../support/databases.ts";
import { mcpClient } from "../support/mcp-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const MODERN = "2026-07-28";
const ACCEPT = "application/json, text/event-stream";
const [sqlite] = dialects;

const meta = (version = MODERN) => ({
  "io.modelcontextprotocol/protocolVersion": version,
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "0" },
  "io.modelcontextprotocol/clientCapabilities": {},
});

type Params = Record<string, unknown>;

/** A 2026-07-28 request as a conforming client sends it: `_meta` in the body, its headers mirrored. */
function modernRequest(method: string, params: Params = {}, id: string | number = 1) {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: ACCEPT,
    "mcp-protocol-version": MODERN,
    "mcp-method": method,
  };
  const named = params.name ?? params.uri;
  if (typeof named === "string") headers["mcp-name"] = named;
  return {
    headers,
    body: { jsonrpc: "2.0", id, method, params: { ...params, _meta: { ...meta(), ...(params._meta as object) } } },
  };
}

describe("MCP 2026-07-28 (stateless) over raw HTTP", () => {
  let t: TestServer;
  let aliceToken: string;
  const post = (body: unknown, headers: Record<string, string>, token?: string | null) =>
    t.fetch("/mcp", { method: "POST", headers, body: JSON.stringify(body), token });
  const call = async (method: string, params: Params = {}, token?: string | null) => {
    const { headers, body } = modernRequest(method, params);
    return post(body, headers, token);
  };

  beforeAll(async () => {
    if (!sqlite) throw new Error("no dialect");
    t = await startTestServer(sqlite, { release: fixture("basic"), env: { HANDLE: "modern" } });
    aliceToken = await t.userToken("alice");
  });
  afterAll(() => t.stop());

  test("server/discover answers versions, capabilities, server info, the environment's instructions and caching hints", async () => {
    const res = await call("server/discover");
    expect(res.status).toBe(200);
    expect(res.headers.get("mcp-session-id")).toBeNull();
    const { id, result } = await res.json();
    expect(id).toBe(1);
    expect(result.supportedVersions).toEqual([
      MODERN,
      "2025-11-25",
      "2025-06-18",
      "2025-03-26",
      "2024-11-05",
      "2024-10-07",
    ]);
    expect(result).toMatchObject({
      resultType: "complete",
      capabilities: { tools: {}, resources: {} },
      _meta: { "io.modelcontextprotocol/serverInfo": { name: "actuate", version: expect.any(String) } },
      ttlMs: expect.any(Number),
      cacheScope: "public",
    });
    expect(result.instructions).toContain('Actuate environment "modern": test fixture');
  });

  test("every result has resultType; lists and reads carry ttlMs and cacheScope (tools and reads private to the caller)", async () => {
    const expected: Record<string, string> = {
      "tools/list": "private",
      "resources/list": "public",
      "resources/templates/list": "public",
    };
    for (const [method, scope] of Object.entries(expected)) {
      const { result } = await (await call(method)).json();
      expect(result).toMatchObject({ resultType: "complete", cacheScope: scope });
      expect(Number.isInteger(result.ttlMs) && result.ttlMs >= 0).toBe(true);
    }
    const read = (await (await call("resources/read", { uri: "service://modern/schema" })).json()).result;
    expect(read).toMatchObject({ resultType: "complete", cacheScope: "private", ttlMs: expect.any(Number) });
    expect(JSON.parse(read.contents[0].text).handle).toBe("modern");

    const called = (await (await call("tools/call", { name: "test.echo", arguments: { text: "hi" } })).json()).result;
    expect(called).toMatchObject({ resultType: "complete", structuredContent: { text: "hi" } });
    expect(called.ttlMs).toBeUndefined();
  });

  test("a tools/call runs as the caller, records its execution and keeps the dev.service request id (idempotent retry)", async () => {
    const requestId = crypto.randomUUID();
    const params = { name: "test.whoami", arguments: {}, _meta: { "dev.service/requestId": requestId } };
    const first = (await (await call("tools/call", params, aliceToken)).json()).result;
    expect(first.structuredContent).toMatchObject({ kind: "user", id: "alice" });
    const named = first._meta["dev.service/execution"];
    expect(named).toMatchObject({ requestId, status: "succeeded" });
    const again = (await (await call("tools/call", params, aliceToken)).json()).result;
    expect(again._meta["dev.service/execution"].id).toBe(named.id);
    const execution = await (await t.fetch(`/executions/${named.id}`, { token: aliceToken })).json();
    expect(execution).toMatchObject({ action: "test.whoami", principal: { kind: "user", id: "alice" } });
  });

  test("refusals are the same tool errors as in the legacy era; an unknown tool is -32602", async () => {
    const failed = (await (await call("tools/call", { name: "test.fail", arguments: { message: "no" } })).json())
      .result;
    expect(failed).toMatchObject({ resultType: "complete", isError: true });
    expect(JSON.parse(failed.content[0].text)).toMatchObject({ error: "action_failed", message: "no" });
    const invalid = (await (await call("tools/call", { name: "test.echo", arguments: [1] })).json()).result;
    expect(JSON.parse(invalid.content[0].text)).toMatchObject({ error: "action_contract_validation_failed" });
    const unknown = await call("tools/call", { name: "nope.nope", arguments: {} });
    expect(await unknown.json()).toMatchObject({ id: 1, error: { code: -32602, message: "Unknown tool: nope.nope" } });
    const missing = await (await call("resources/read", { uri: "service://modern/nothing" })).json();
    expect(missing).toMatchObject({ error: { code: -32602, data: { uri: "service://modern/nothing" } } });
  });

  test("missing _meta, or _meta without protocolVersion or clientCapabilities, is 400 -32602 with the request's id", async () => {
    const { headers } = modernRequest("server/discover");
    const { "io.modelcontextprotocol/protocolVersion": _v, ...noVersion } = meta();
    const { "io.modelcontextprotocol/clientCapabilities": _c, ...noCapabilities } = meta();
    for (const params of [{}, { _meta: noVersion }, { _meta: noCapabilities }]) {
      const res = await post({ jsonrpc: "2.0", id: "m-1", method: "server/discover", params }, headers);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ id: "m-1", ok: false, error: { code: -32602 } });
    }
    // clientInfo is optional.
    const { "io.modelcontextprotocol/clientInfo": _i, ...noInfo } = meta();
    const served = await post({ jsonrpc: "2.0", id: 2, method: "server/discover", params: { _meta: noInfo } }, headers);
    expect(served.status).toBe(200);
  });

  test("headers that disagree with the body, or are missing, are 400 -32020 HeaderMismatch", async () => {
    const cases: [string, Params, Record<string, string | null>][] = [
      ["tools/list", {}, { "mcp-method": "prompts/list" }],
      ["tools/list", {}, { "mcp-method": null }],
      ["tools/list", {}, { "mcp-method": "TOOLS/LIST" }],
      ["tools/list", {}, { "mcp-protocol-version": "2025-11-25" }],
      ["tools/call", { name: "test.echo", arguments: { text: "x" } }, { "mcp-name": "test.fail" }],
      ["tools/call", { name: "test.echo", arguments: { text: "x" } }, { "mcp-name": null }],
      ["tools/call", { name: "test.echo", arguments: { text: "x" } }, { "mcp-name": "=?base64?not base64?=" }],
      ["resources/read", { uri: "service://modern/schema" }, { "mcp-name": "service://other/schema" }],
    ];
    for (const [method, params, changed] of cases) {
      const { headers, body } = modernRequest(method, params, 9);
      for (const [name, value] of Object.entries(changed)) {
        if (value === null) delete headers[name];
        else headers[name] = value;
      }
      const res = await post(body, headers);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ id: 9, ok: false, error: { code: -32020 } });
    }
    // _meta names another version than the header.
    const { headers, body } = modernRequest("tools/list");
    body.params._meta["io.modelcontextprotocol/protocolVersion"] = "v999.0.0";
    expect((await (await post(body, headers)).json()).error.code).toBe(-32020);
  });

  test("Mcp-Name in the =?base64?…?= form is decoded before it is compared; surrounding whitespace is ignored", async () => {
    const { headers, body } = modernRequest("tools/call", { name: "test.echo", arguments: { text: "b64" } });
    headers["mcp-name"] = `=?base64?${btoa("test.echo")}?=`;
    expect((await (await post(body, headers)).json()).result.structuredContent).toEqual({ text: "b64" });
    headers["mcp-name"] = "  test.echo  ";
    expect((await post(body, headers)).status).toBe(200);
  });

  test("an unsupported version is 400 -32022 listing the supported ones and echoing the requested one", async () => {
    const { headers, body } = modernRequest("server/discover", {}, 301);
    body.params._meta["io.modelcontextprotocol/protocolVersion"] = "v999.0.0";
    headers["mcp-protocol-version"] = "v999.0.0";
    const res = await post(body, headers);
    expect(res.status).toBe(400);
    const { id, error } = await res.json();
    expect(id).toBe(301);
    expect(error).toMatchObject({ code: -32022, data: { requested: "v999.0.0" } });
    expect(error.data.supported).toContain(MODERN);
  });

  test("an unknown method, and the methods the revision removed, are 404 -32601", async () => {
    // tasks/result belonged to the 2025-11-25 experimental tasks; the Tasks extension answers the result in tasks/get.
    for (const method of [
      "unknown/method",
      "initialize",
      "ping",
      "logging/setLevel",
      "resources/subscribe",
      "tasks/result",
    ]) {
      const res = await call(method);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ id: 1, error: { code: -32601 } });
    }
  });

  test("a notification is 202 with no body; a client-sent response is 400 -32600", async () => {
    const { headers } = modernRequest("notifications/cancelled");
    const note = await post({ jsonrpc: "2.0", method: "notifications/cancelled", params: { _meta: meta() } }, headers);
    expect(note.status).toBe(202);
    expect(await note.text()).toBe("");
    const response = await post({ jsonrpc: "2.0", id: 1, result: {} }, headers);
    expect(response.status).toBe(400);
    expect((await response.json()).error.code).toBe(-32600);
  });

  test("Accept and Content-Type are checked as in the legacy era (406, 415)", async () => {
    const { headers, body } = modernRequest("tools/list");
    expect((await post(body, { ...headers, accept: "application/json" })).status).toBe(406);
    expect((await post(body, { ...headers, "content-type": "text/plain" })).status).toBe(415);
  });

  test("no credential or a bad one is 401; a foreign Origin 403, before any MCP handling", async () => {
    for (const token of [null, "wrong"]) {
      const res = await call("server/discover", {}, token);
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toContain("resource_metadata=");
    }
    const { headers, body } = modernRequest("server/discover");
    expect((await post(body, { ...headers, origin: "https://evil.example" })).status).toBe(403);
  });

  test("an initialize request still selects the legacy era, and the SDK client works beside modern requests", async () => {
    const client: Client = await mcpClient(t, aliceToken);
    try {
      expect(client.getServerVersion()).toMatchObject({ name: "actuate" });
      const result = await client.callTool({ name: "test.echo", arguments: { text: "legacy" } });
      expect(result.structuredContent).toEqual({ text: "legacy" });
      expect((result as Record<string, unknown>).resultType).toBeUndefined();
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain("test.echo");
    } finally {
      await client.close();
    }
    const res = await call("tools/list");
    expect((await res.json()).result.resultType).toBe("complete");
  });
});

describe("MCP 2026-07-28: one caller never sees another's runs or hidden tools", () => {
  let t: TestServer;
  beforeAll(async () => {
    if (!sqlite) throw new Error("no dialect");
    t = await startTestServer(sqlite, { release: fixture("workflows") });
  });
  afterAll(() => t.stop());

  test("a run is readable by its caller only; another's is the same -32602 as a missing one", async () => {
    const [alice, bob] = [await t.userToken("alice"), await t.userToken("bob")];
    const call = async (method: string, params: Params, token: string) => {
      const { headers, body } = modernRequest(method, params);
      return (await t.fetch("/mcp", { method: "POST", headers, body: JSON.stringify(body), token })).json();
    };
    const { result } = await call("tools/call", { name: "wf.steps", arguments: { n: 4 } }, alice);
    const { resource } = result.structuredContent;
    const run = await eventually(async () => {
      const read = (await call("resources/read", { uri: resource }, alice)).result;
      expect(read).toMatchObject({ cacheScope: "private", ttlMs: 0 });
      const parsed = JSON.parse(read.contents[0].text);
      return parsed.status === "succeeded" ? parsed : null;
    });
    expect(run.output).toEqual({ total: 51 });
    expect(await call("resources/read", { uri: resource }, bob)).toMatchObject({
      error: { code: -32602, data: { uri: resource } },
    });
  });
});

describe("MCP 2026-07-28: workflows as tasks (Tasks extension)", () => {
  let t: TestServer;
  let alice: string;
  const withTasks = { extensions: { "io.modelcontextprotocol/tasks": {} } };
  const call = async (method: string, params: Params, token: string, capabilities: object = withTasks) => {
    const { headers, body } = modernRequest(method, params);
    const named = params.taskId;
    if (typeof named === "string") headers["mcp-name"] = named;
    body.params._meta["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    const res = await t.fetch("/mcp", { method: "POST", headers, body: JSON.stringify(body), token });
    return { status: res.status, ...(await res.json()) };
  };
  beforeAll(async () => {
    if (!sqlite) throw new Error("no dialect");
    t = await startTestServer(sqlite, { release: fixture("workflows"), env: { WORKFLOW_POLL_MS: "50" } });
    alice = await t.userToken("alice");
  });
  afterAll(() => t.stop());

  test("server/discover advertises the extension", async () => {
    const { result } = await call("server/discover", {}, alice);
    expect(result.capabilities.extensions).toEqual({ "io.modelcontextprotocol/tasks": {} });
  });

  test("a client declaring the extension gets a task, polls it with tasks/get to completed, and gets the output", async () => {
    const { result: created } = await call("tools/call", { name: "wf.steps", arguments: { n: 4 } }, alice);
    expect(created).toMatchObject({ resultType: "task", status: "working", ttlMs: null, pollIntervalMs: 1000 });
    expect(typeof created.taskId).toBe("string");
    const done = await eventually(async () => {
      const { result } = await call("tasks/get", { taskId: created.taskId }, alice);
      expect(result).toMatchObject({ resultType: "complete", taskId: created.taskId });
      return result.status === "completed" ? result : null;
    });
    expect(done.result.structuredContent).toEqual({ total: 51 });
    expect(JSON.parse(done.result.content[0].text)).toEqual({ total: 51 });
    // The task is the run HTTP shows.
    const run = await (await t.fetch(`/runs/${created.taskId}`, { token: alice })).json();
    expect(run).toMatchObject({ status: "succeeded", output: { total: 51 } });
  });

  test("tasks/cancel cancels the run; tasks/get then answers cancelled, and a second cancel is acknowledged", async () => {
    const { result: created } = await call("tools/call", { name: "wf.nap", arguments: { ms: 60_000 } }, alice);
    expect(created.resultType).toBe("task");
    const cancel = await call("tasks/cancel", { taskId: created.taskId }, alice);
    expect(cancel.result).toEqual({ resultType: "complete" });
    const cancelled = await eventually(async () => {
      const { result } = await call("tasks/get", { taskId: created.taskId }, alice);
      return result.status === "cancelled" ? result : null;
    });
    expect(cancelled.taskId).toBe(created.taskId);
    expect((await (await t.fetch(`/runs/${created.taskId}`, { token: alice })).json()).status).toBe("canceled");
    expect((await call("tasks/cancel", { taskId: created.taskId }, alice)).result).toEqual({ resultType: "complete" });
  });

  test("tasks/* name their task in Mcp-Name: a different one is 400 -32020", async () => {
    const { result: created } = await call("tools/call", { name: "wf.steps", arguments: { n: 2 } }, alice);
    const { headers, body } = modernRequest("tasks/get", { taskId: created.taskId });
    body.params._meta["io.modelcontextprotocol/clientCapabilities"] = withTasks;
    headers["mcp-name"] = crypto.randomUUID();
    const res = await t.fetch("/mcp", { method: "POST", headers, body: JSON.stringify(body), token: alice });
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe(-32020);
  });

  test("without the extension a workflow call answers its admission as before, and tasks/* is 400 -32021", async () => {
    const { result } = await call("tools/call", { name: "wf.steps", arguments: { n: 1 } }, alice, {});
    expect(result.resultType).toBe("complete");
    expect(result.structuredContent).toMatchObject({ runId: expect.any(String), statusUrl: expect.any(String) });
    const refused = await call("tasks/get", { taskId: result.structuredContent.runId }, alice, {});
    expect(refused.status).toBe(400);
    expect(refused.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { "io.modelcontextprotocol/tasks": {} } } },
    });
  });

  test("another caller's task, or none, is -32602 for get, cancel and update; its run goes on", async () => {
    const bob = await t.userToken("bob");
    const { result: created } = await call("tools/call", { name: "wf.nap", arguments: { ms: 60_000 } }, alice);
    for (const [taskId, token] of [
      [created.taskId, bob],
      [crypto.randomUUID(), alice],
      ["not-a-task", alice],
    ] as const) {
      for (const method of ["tasks/get", "tasks/cancel", "tasks/update"]) {
        const answer = await call(
          method,
          { taskId, ...(method === "tasks/update" ? { inputResponses: {} } : {}) },
          token,
        );
        expect(answer.error).toMatchObject({ code: -32602, data: { taskId } });
      }
    }
    expect((await call("tasks/get", { taskId: created.taskId }, alice)).result.status).toBe("working");
    await call("tasks/cancel", { taskId: created.taskId }, alice);
  });

  test("a refused workflow call is a tool error, not a task, even when the client declared the extension", async () => {
    const { result } = await call("tools/call", { name: "wf.steps", arguments: { n: "x" } }, alice);
    expect(result).toMatchObject({ resultType: "complete", isError: true });
  });
});

describe("MCP 2026-07-28: a function call past WAIT_MS", () => {
  let t: TestServer;
  const withTasks = { extensions: { "io.modelcontextprotocol/tasks": {} } };
  const call = async (method: string, params: Params, capabilities: object) => {
    const { headers, body } = modernRequest(method, params);
    if (typeof params.taskId === "string") headers["mcp-name"] = params.taskId;
    body.params._meta["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    return (await t.fetch("/mcp", { method: "POST", headers, body: JSON.stringify(body) })).json();
  };
  beforeAll(async () => {
    if (!sqlite) throw new Error("no dialect");
    t = await startTestServer(sqlite, { release: fixture("basic"), env: { WAIT_MS: "300" } });
  });
  afterAll(() => t.stop());

  test("continues as a task when the client declared the extension, followed to its output", async () => {
    const gate = crypto.randomUUID();
    const args = { key: crypto.randomUUID(), gate };
    const { result: created } = await call("tools/call", { name: "test.count", arguments: args }, withTasks);
    expect(created).toMatchObject({ resultType: "task", status: "working" });
    expect((await call("tasks/get", { taskId: created.taskId }, withTasks)).result.status).toBe("working");
    // A function has no cancel: the cooperative cancel is acknowledged and it runs to its end.
    expect((await call("tasks/cancel", { taskId: created.taskId }, withTasks)).result).toEqual({
      resultType: "complete",
    });
    openGate(gate);
    const done = await eventually(async () => {
      const { result } = await call("tasks/get", { taskId: created.taskId }, withTasks);
      return result.status === "completed" ? result : null;
    });
    expect(done.result.structuredContent).toEqual({ runs: 1 });
    expect(done.result._meta["dev.service/execution"]).toMatchObject({ id: created.taskId, status: "succeeded" });
  });

  test("answers execution_result_timeout as the contract says when the client did not ask for tasks", async () => {
    const gate = crypto.randomUUID();
    const args = { key: crypto.randomUUID(), gate };
    const { result } = await call("tools/call", { name: "test.count", arguments: args }, {});
    expect(result).toMatchObject({ resultType: "complete", isError: true });
    expect(JSON.parse(result.content[0].text)).toMatchObject({ error: "execution_result_timeout" });
    openGate(gate);
  });
});
