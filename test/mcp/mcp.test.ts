import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { openGate, runsOf } from "../fixtures/releases/basic/lib/probe.ts";
import { dialects } from "../support/databases.ts";
import { mcpClient } from "../support/mcp-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const EXECUTION = "dev.service/execution";

const text = (result: unknown) => JSON.parse((result as { content: { text: string }[] }).content[0]?.text ?? "null");

for (const dialect of dialects) {
  describe(`MCP with the SDK client (${dialect.name})`, () => {
    let t: TestServer;
    let client: Client;
    let aliceToken: string;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic"), env: { WAIT_MS: "300", HANDLE: "acme" } });
      aliceToken = await t.userToken("alice");
      client = await mcpClient(t, aliceToken);
    });
    afterAll(async () => {
      await client.close();
      await t.stop();
    });

    test("initialize names the server and declares tools and resources, without listChanged or a session", async () => {
      expect(client.getServerVersion()).toMatchObject({ name: "actuate" });
      const capabilities = client.getServerCapabilities();
      expect(capabilities?.tools).toBeDefined();
      expect(capabilities?.tools?.listChanged).toBeUndefined();
      expect(capabilities?.resources).toBeDefined();
    });

    test("tools/list has one tool per action with its contract, plus query and describe", async () => {
      const { tools } = await client.listTools();
      const names = tools.map((tool) => tool.name);
      expect(names).toEqual(expect.arrayContaining(["test.echo", "test.count", "test.fail", "query", "describe"]));
      const contract = await (await t.fetch("/actions/test.echo/contract")).json();
      const echo = tools.find((tool) => tool.name === "test.echo");
      expect(echo?.description).toBe(contract.description);
      expect(echo?.inputSchema).toEqual(contract.input);
      expect(echo?.outputSchema).toEqual(contract.output);
      for (const tool of tools.filter((tool) => tool.name.includes("."))) {
        expect(tool.annotations?.readOnlyHint).toBeUndefined();
      }
    });

    test("a succeeding call answers structuredContent mirrored as text, and names the execution recorded for the caller", async () => {
      const result = await client.callTool({ name: "test.echo", arguments: { text: "hello", n: 3 } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({ text: "hello", n: 3 });
      expect(text(result)).toEqual({ text: "hello", n: 3 });
      const named = result._meta?.[EXECUTION] as { id: string; requestId: string; status: string; url: string };
      expect(named).toMatchObject({ status: "succeeded" });
      expect(named.url).toBe(`${t.url}/executions/${named.id}`);
      const execution = await (await t.fetch(`/executions/${named.id}`, { token: aliceToken })).json();
      expect(execution).toMatchObject({
        id: named.id,
        requestId: named.requestId,
        action: "test.echo",
        status: "succeeded",
        output: { text: "hello", n: 3 },
        principal: { kind: "user", id: "alice" },
      });
      const whoami = await client.callTool({ name: "test.whoami", arguments: {} });
      expect(whoami.structuredContent).toMatchObject({ kind: "user", id: "alice" });
    });

    test("a failing action is a readable tool error with its message and no structuredContent", async () => {
      const result = await client.callTool({ name: "test.fail", arguments: { message: "out of paper" } });
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toBeUndefined();
      expect(text(result)).toMatchObject({ error: "action_failed", message: "out of paper" });
      expect(result._meta?.[EXECUTION]).toMatchObject({ status: "failed" });
    });

    test("input that does not fit is a tool error naming the failing part; nothing runs", async () => {
      const counter = crypto.randomUUID();
      const result = await client.callTool({ name: "test.count", arguments: { key: counter, extra: 1 } });
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toBeUndefined();
      const body = text(result);
      expect(body.error).toBe("action_contract_validation_failed");
      expect(body.details.issues).toContainEqual(expect.objectContaining({ where: "/input/extra" }));
      expect(runsOf(counter)).toBe(0);
    });

    test("a call still running at WAIT_MS answers execution_result_timeout with its url; the execution goes on", async () => {
      const gate = crypto.randomUUID();
      const result = await client.callTool({ name: "test.count", arguments: { key: crypto.randomUUID(), gate } });
      expect(result.isError).toBe(true);
      const named = result._meta?.[EXECUTION] as { id: string; url: string; status: string };
      expect(named.status).toBe("running");
      expect(text(result)).toMatchObject({ error: "execution_result_timeout", executionId: named.id });
      expect(text(result).message).toContain(named.url);
      openGate(gate);
      const finished = await (await t.fetch(`/executions/${named.id}/result`, { token: aliceToken })).json();
      expect(finished).toMatchObject({ status: "succeeded", output: { runs: 1 } });
    });

    test("the request id in _meta makes an agent's retry idempotent", async () => {
      const counter = crypto.randomUUID();
      const requestId = crypto.randomUUID();
      const call = () =>
        client.callTool({
          name: "test.count",
          arguments: { key: counter },
          _meta: { "dev.service/requestId": requestId },
        });
      const first = await call();
      const second = await call();
      const named = (result: typeof first) => result._meta?.[EXECUTION] as { id: string; requestId: string };
      expect(named(second).id).toBe(named(first).id);
      expect(named(first).requestId).toBe(requestId);
      expect(runsOf(counter)).toBe(1);
      const conflict = await client.callTool({
        name: "test.count",
        arguments: { key: "other" },
        _meta: { "dev.service/requestId": requestId },
      });
      expect(conflict.isError).toBe(true);
      expect(text(conflict)).toMatchObject({ error: "REQUEST_CONFLICT" });
      // The conflict names the existing execution with its real status.
      expect(conflict._meta?.[EXECUTION]).toEqual({
        id: named(first).id,
        requestId,
        status: "succeeded",
        url: `${t.url}/executions/${named(first).id}`,
      });
    });

    test("input refusals name no execution in _meta (id null, status refused)", async () => {
      const result = await client.callTool({ name: "test.echo", arguments: { text: 42 } });
      expect(result.isError).toBe(true);
      expect(text(result)).toMatchObject({ error: "action_contract_validation_failed" });
      const named = result._meta?.[EXECUTION] as { id: null; requestId: string; status: string; url: null };
      expect(named).toMatchObject({ id: null, status: "refused", url: null });
      expect(named.requestId).toMatch(/^[0-9a-f-]{36}$/);
    });

    test("arguments that are not an object are a readable input refusal, never a protocol error", async () => {
      for (const args of [[1, 2], "text", 7, null]) {
        const response = await t.fetch("/mcp", {
          method: "POST",
          token: aliceToken,
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25",
          },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 9,
            method: "tools/call",
            params: { name: "test.echo", arguments: args },
          }),
        });
        expect(response.status).toBe(200);
        const body = await response.json();
        expect(body.error).toBeUndefined();
        expect(body.result.isError).toBe(true);
        const refusal = JSON.parse(body.result.content[0].text);
        expect(refusal).toMatchObject({ error: "action_contract_validation_failed" });
        expect(refusal.details.issues[0]).toMatchObject({ where: "/input", code: "invalid_type" });
        expect(body.result._meta[EXECUTION]).toMatchObject({ id: null, status: "refused" });
      }
    });

    test("query and describe results carry the execution key too: they record none", async () => {
      for (const [name, args] of [
        ["describe", {}],
        ["query", { query: {} }],
      ] as const) {
        const result = await client.callTool({ name, arguments: args });
        expect(result._meta?.[EXECUTION]).toEqual({ id: null, requestId: null, status: "not_recorded", url: null });
      }
    });

    test("an action that takes files answers execution_files_required and runs nothing", async () => {
      const result = await client.callTool({ name: "test.attach", arguments: { note: "hi" } });
      expect(result.isError).toBe(true);
      expect(text(result)).toMatchObject({ error: "execution_files_required" });
      expect(result.structuredContent).toBeUndefined();
      expect(result._meta?.[EXECUTION]).toMatchObject({ id: null, status: "refused", url: null });
    });

    test("an unknown tool is JSON-RPC error -32602", async () => {
      await expect(client.callTool({ name: "test.nope", arguments: {} })).rejects.toMatchObject({ code: -32602 });
    });

    test("describe and the schema resource answer the release's domains and actions", async () => {
      const described = await client.callTool({ name: "describe", arguments: {} }, CallToolResultSchema);
      const schema = described.structuredContent as { handle: string; domains: string[]; actions: { name: string }[] };
      expect(schema.handle).toBe("acme");
      expect(schema.domains).toEqual(["test"]);
      expect(schema.actions.map((a) => a.name)).toContain("test.echo");
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.uri)).toEqual(["service://acme/schema"]);
      const read = await client.readResource({ uri: "service://acme/schema" });
      expect(JSON.parse((read.contents[0] as { text: string }).text)).toEqual(schema);
      expect((await client.listResourceTemplates()).resourceTemplates).toEqual([
        expect.objectContaining({ uriTemplate: "service://acme/runs/{runId}", name: "run" }),
      ]);
      await expect(client.readResource({ uri: "service://acme/other" })).rejects.toMatchObject({ code: -32002 });
    });

    test("query is a readable tool error until the data layer exists", async () => {
      const result = await client.callTool({ name: "query", arguments: { query: { notes: {} } } });
      expect(result.isError).toBe(true);
      expect(text(result).error).toBe("data_provider_rejected");
    });

    test("a service key reaches the same tools and records its executions too", async () => {
      const admin = await mcpClient(t, t.serviceKey);
      const result = await admin.callTool({ name: "test.whoami", arguments: {} });
      expect(result.structuredContent).toMatchObject({ kind: "service" });
      await admin.close();
    });

    test("the very next tools/list after a release switch lists the new release's actions", async () => {
      await t.publish(fixture("basic-v2"));
      await eventually(() => t.server.releases.current()?.version === "t2");
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain("test.added");
      expect(tools.map((tool) => tool.name)).not.toContain("test.echo");
    });
  });
}
