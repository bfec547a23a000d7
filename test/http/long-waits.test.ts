import { afterAll, describe, expect, test } from "bun:test";
import { openGate } from "../fixtures/releases/basic/lib/probe.ts";
import { dialects } from "../support/databases.ts";
import { eventually, fixture, startTestServer, type TestResponse, type TestServer } from "../support/server.ts";

// Above the server's idle timeout (30 s), which once dropped every wait longer than it with an empty reply.
const WAIT_MS = 45_000;

/** Sends a request and answers its response with how long it took. */
async function timed(send: () => Promise<TestResponse>) {
  const sent = Date.now();
  const res = await send();
  const body = await res.json();
  return { status: res.status, body, elapsedMs: Date.now() - sent };
}

describe(`every wait holds its connection for the whole WAIT_MS (${WAIT_MS} ms)`, () => {
  const servers: TestServer[] = [];
  const gates: string[] = [];
  afterAll(async () => {
    for (const gate of gates) openGate(gate);
    await Promise.all(servers.map((t) => t.stop()));
  });

  /** Invoke, its replay, `/result` and an MCP tools/call of executions that outlive WAIT_MS, all at once. */
  async function waitsOn(t: TestServer) {
    const gate = crypto.randomUUID();
    const requestId = crypto.randomUUID();
    gates.push(gate);
    const input = { key: crypto.randomUUID(), gate };
    const invoke = timed(() => t.invoke("test.count", input, { requestId }));
    const execution = await eventually(async () => {
      const res = await t.fetch(`/executions/requests/${requestId}`);
      return res.status === 200 ? res.json() : null;
    });
    const replay = timed(() => t.invoke("test.count", input, { requestId }));
    const result = timed(() => t.fetch(`/executions/${execution.id}/result`));
    const mcpGate = crypto.randomUUID();
    gates.push(mcpGate);
    const toolCall = timed(() =>
      t.fetch("/mcp", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "test.count", arguments: { key: crypto.randomUUID(), gate: mcpGate } },
        }),
      }),
    );
    const answers = await Promise.all([invoke, replay, result, toolCall]);
    return { execution, answers };
  }

  test("invoke and its replay answer 202, /result 504, a tool call execution_result_timeout — none is dropped", async () => {
    for (const dialect of dialects) {
      servers.push(await startTestServer(dialect, { release: fixture("basic"), env: { WAIT_MS: String(WAIT_MS) } }));
    }
    for (const { execution, answers } of await Promise.all(servers.map(waitsOn))) {
      const [invoke, replay, result, toolCall] = answers;
      expect(invoke.status).toBe(202);
      expect(invoke.body.execution).toMatchObject({ id: execution.id, status: "running" });
      expect(replay.status).toBe(202);
      expect(replay.body.execution.id).toBe(execution.id);
      expect(result.status).toBe(504);
      expect(result.body).toMatchObject({ ok: false, error: "execution_result_timeout", executionId: execution.id });
      expect(toolCall.status).toBe(200);
      expect(toolCall.body.result.isError).toBe(true);
      expect(JSON.parse(toolCall.body.result.content[0].text)).toMatchObject({ error: "execution_result_timeout" });
      // Each answer came from the wait running out, not from anything earlier (timers may fire a little early).
      for (const answer of answers) expect(answer.elapsedMs).toBeGreaterThan(WAIT_MS - 100);
    }
  }, 120_000);
});
