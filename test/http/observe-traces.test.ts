import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { dialects } from "../support/databases.ts";
import { startHostingServer } from "../support/hosting.ts";
import { mcpClient } from "../support/mcp-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: { stringValue?: string; intValue?: number | string } }[];
  status?: { code?: number; message?: string };
}

/** An OTLP/HTTP receiver (JSON encoding, as the exporter sends): every span it was sent. */
function otlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const resources: unknown[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      if (request.method !== "POST" || new URL(request.url).pathname !== "/v1/traces") {
        return new Response("not found", { status: 404 });
      }
      const body = (await request.json()) as {
        resourceSpans: { resource: unknown; scopeSpans: { spans: ReceivedSpan[] }[] }[];
      };
      for (const { resource, scopeSpans } of body.resourceSpans) {
        resources.push(resource);
        for (const scope of scopeSpans) spans.push(...scope.spans);
      }
      return Response.json({});
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, spans, resources, stop: () => server.stop(true) };
}

const hex = (bytes: number) => randomBytes(bytes).toString("hex");
const traceparentOf = (traceId: string, spanId: string) => `00-${traceId}-${spanId}-01`;
const attribute = (span: ReceivedSpan, key: string) => span.attributes.find((a) => a.key === key)?.value.stringValue;

describe("traces (OTLP/HTTP, OTEL_EXPORTER_OTLP_ENDPOINT set)", () => {
  const receiver = otlpReceiver();
  let t: TestServer;
  let w: TestServer;
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: "actuate-test" };
  beforeAll(async () => {
    const dialect = dialects[0] as (typeof dialects)[number];
    t = await startTestServer(dialect, { release: fixture("basic"), env });
    w = await startTestServer(dialect, { release: fixture("workflows"), env });
  });
  afterAll(async () => {
    await t.stop();
    await w.stop();
    receiver.stop();
  });

  /** The spans of one trace, once `done` holds for them (spans are sent in batches about every second). */
  const traceOf = (traceId: string, done: (spans: ReceivedSpan[]) => boolean) =>
    eventually(() => {
      const spans = receiver.spans.filter((s) => s.traceId === traceId);
      return done(spans) ? spans : null;
    }, 15_000).then((spans) => spans as ReceivedSpan[]);

  test("an HTTP caller's traceparent is the parent of the request's span, whose children are the claim's commit and the execution, whose child is its outcome's commit", async () => {
    const traceId = hex(16);
    const callerSpan = hex(8);
    const res = await t.fetch("/actions/test.echo/invoke", {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: traceparentOf(traceId, callerSpan) },
      body: JSON.stringify({ requestId: crypto.randomUUID(), input: { text: "traced" } }),
    });
    const { execution } = await res.json();
    expect(execution.status).toBe("succeeded");

    const spans = await traceOf(traceId, (s) => s.some((x) => x.name === "db commit outcome"));
    const request = spans.find((s) => s.name === "POST /actions/:name/invoke");
    const executed = spans.find((s) => s.name === "execute test.echo");
    expect(request?.parentSpanId).toBe(callerSpan);
    expect(executed?.parentSpanId).toBe(request?.spanId);
    // The database batches each side waited for: the claim under the request, the outcome under the execution.
    expect(spans.find((s) => s.name === "db commit claim")?.parentSpanId).toBe(request?.spanId);
    expect(spans.find((s) => s.name === "db commit outcome")?.parentSpanId).toBe(executed?.spanId);
    expect(executed && attribute(executed, "actuate.execution_id")).toBe(execution.id);
    expect(request && attribute(request, "http.route")).toBe("/actions/:name/invoke");
    expect(JSON.stringify(receiver.resources)).toContain("actuate-test");
  }, 20_000);

  test("a failed execution's span is marked failed with its message", async () => {
    const traceId = hex(16);
    await t.fetch("/actions/test.fail/invoke", {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: traceparentOf(traceId, hex(8)) },
      body: JSON.stringify({ requestId: crypto.randomUUID(), input: { message: "it broke" } }),
    });
    const spans = await traceOf(traceId, (s) => s.some((x) => x.name === "execute test.fail"));
    const executed = spans.find((s) => s.name === "execute test.fail");
    expect(executed?.status).toMatchObject({ code: 2, message: "it broke" });
  }, 20_000);

  test("an MCP tool call's _meta.traceparent is the parent of the execution's span", async () => {
    const traceId = hex(16);
    const agentSpan = hex(8);
    const client = await mcpClient(t, t.serviceKey);
    try {
      const result = await client.callTool({
        name: "test.echo",
        arguments: { text: "from an agent" },
        _meta: { traceparent: traceparentOf(traceId, agentSpan) },
      });
      expect(result.isError).toBeFalsy();
    } finally {
      await client.close();
    }
    const spans = await traceOf(traceId, (s) => s.some((x) => x.name === "execute test.echo"));
    expect(spans.find((s) => s.name === "execute test.echo")?.parentSpanId).toBe(agentSpan);
  }, 20_000);

  test("a workflow run's pass is a child of the request that admitted it, and each step a child of the pass", async () => {
    const traceId = hex(16);
    const res = await w.fetch("/actions/wf.steps/invoke", {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: traceparentOf(traceId, hex(8)) },
      body: JSON.stringify({ requestId: crypto.randomUUID(), input: { n: 1 } }),
    });
    const { runId } = await res.json();
    expect((await (await w.fetch(`/executions/${runId}/result`)).json()).status).toBe("succeeded");

    const spans = await traceOf(
      traceId,
      (s) => s.filter((x) => x.name.startsWith("step ") || x.name.startsWith("db commit step ")).length === 6,
    );
    const request = spans.find((s) => s.name === "POST /actions/:name/invoke");
    const pass = spans.find((s) => s.name === "workflow wf.steps");
    expect(pass?.parentSpanId).toBe(request?.spanId);
    expect(pass && attribute(pass, "actuate.execution_id")).toBe(runId);
    const steps = spans.filter((s) => s.name.startsWith("step "));
    expect(steps.map((s) => s.name).sort()).toEqual(["step one", "step three", "step two"]);
    for (const step of steps) expect(step.parentSpanId).toBe(pass?.spanId);
    // Each step's checkpoint commit is a child of the pass too.
    const commits = spans.filter((s) => s.name.startsWith("db commit step "));
    expect(commits.map((s) => s.name).sort()).toEqual([
      "db commit step one",
      "db commit step three",
      "db commit step two",
    ]);
    for (const commit of commits) expect(commit.parentSpanId).toBe(pass?.spanId);
  }, 20_000);
  test("hosting mode: an environment's spans (request, execution, commits) carry actuate.environment", async () => {
    const dialect = dialects[0] as (typeof dialects)[number];
    const h = await startHostingServer(dialect, {
      environments: [
        { handle: "a", organization: "acme", release: fixture("environments") },
        { handle: "b", organization: "beta", release: fixture("environments") },
      ],
      env,
    });
    try {
      const traced = async (handle: string) => {
        const traceId = hex(16);
        const res = await h.fetch(handle, "/actions/env.whoami/invoke", {
          method: "POST",
          headers: { "content-type": "application/json", traceparent: traceparentOf(traceId, hex(8)) },
          body: JSON.stringify({ requestId: crypto.randomUUID(), input: { note: handle } }),
        });
        expect(res.status).toBe(200);
        return traceOf(traceId, (s) => s.some((x) => x.name === "db commit outcome"));
      };
      for (const handle of ["a", "b"]) {
        const spans = await traced(handle);
        expect(spans.map((s) => s.name).sort()).toEqual([
          "POST /actions/:name/invoke",
          "db commit claim",
          "db commit outcome",
          "execute env.whoami",
        ]);
        for (const span of spans)
          expect([span.name, attribute(span, "actuate.environment")]).toEqual([span.name, handle]);
      }
    } finally {
      await h.stop();
    }
  }, 30_000);
});
