import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import parsePrometheus from "parse-prometheus-text-format";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { LiveClient } from "../support/live-client.ts";
import { mcpClient } from "../support/mcp-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const METRICS_TOKEN = `metrics-token-${crypto.randomUUID()}`;

interface Family {
  name: string;
  type: string;
  metrics: { value?: string; labels?: Record<string, string> }[];
}

/** GET /metrics, parsed by a Prometheus text-format parser (it throws on a malformed line). */
async function scrape(t: TestServer): Promise<{ text: string; families: Map<string, Family> }> {
  const res = await t.fetch("/metrics", { token: METRICS_TOKEN });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
  const text = await res.text();
  const families = new Map<string, Family>(parsePrometheus(text).map((family) => [family.name, family]));
  return { text, families };
}

/** A counter's or gauge's value for exactly these labels (0 when the series does not exist yet). */
function sampleOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const family = families.get(name);
  const series = family?.metrics.find((m) => {
    const own = m.labels ?? {};
    return (
      Object.keys(own).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => own[k] === v)
    );
  });
  return series ? Number(series.value) : 0;
}

/**
 * A histogram's `_count` for these labels, read from the text: the parser above merges the series of a
 * labelled histogram into one (parse-prometheus-text-format 1.1.1), so its counts are read from their lines.
 */
function histogramCount(text: string, name: string, labels: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${name}_count${labels} `));
  return line ? Number(line.split(" ")[1]) : 0;
}

for (const dialect of dialects) {
  describe(`GET /metrics (${dialect.name})`, () => {
    let t: TestServer;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic"), env: { METRICS_TOKEN } });
    });
    afterAll(() => t.stop());

    test("needs a service key or METRICS_TOKEN: none is 401, a user is 403, a wrong token 401", async () => {
      const none = await t.fetch("/metrics", { token: null });
      expect(none.status).toBe(401);
      expect(none.headers.get("www-authenticate")).toStartWith("Bearer ");
      expect(await none.json()).toMatchObject({ ok: false, error: "unauthorized" });

      const user = await t.fetch("/metrics", { token: await t.userToken("alice") });
      expect(user.status).toBe(403);
      const refused = await user.json();
      expect(refused).toMatchObject({ ok: false, error: "access_denied" });
      expect(JSON.stringify(refused)).not.toContain("actuate_");

      const wrong = await t.fetch("/metrics", { token: `${METRICS_TOKEN}x` });
      expect(wrong.status).toBe(401);
      expect(await wrong.json()).toMatchObject({ ok: false, error: "unauthorized" });

      const service = await t.fetch("/metrics");
      expect(service.status).toBe(200);
      expect(await service.text()).toContain("# TYPE actuate_executions_total counter");
      expect((await scrape(t)).families.get("process_resident_memory_bytes")?.type).toBe("GAUGE");
    });

    test("executions and HTTP requests are counted by action and route template, never by id", async () => {
      const before = await scrape(t);
      const echoed = await (await t.invoke("test.echo", { text: "one" })).json();
      await t.invoke("test.echo", { text: "two" });
      const failed = await t.invoke("test.fail", { message: "no" });
      expect(failed.status).toBe(200);
      expect((await t.fetch(`/executions/${echoed.execution.id}`)).status).toBe(200);
      expect((await t.fetch(`/executions/${crypto.randomUUID()}`)).status).toBe(404);
      const after = await scrape(t);

      const succeeded = { action: "test.echo", kind: "function", status: "succeeded" };
      expect(sampleOf(after.families, "actuate_executions_total", succeeded)).toBe(
        sampleOf(before.families, "actuate_executions_total", succeeded) + 2,
      );
      const failures = { action: "test.fail", kind: "function", status: "failed" };
      expect(sampleOf(after.families, "actuate_executions_total", failures)).toBe(
        sampleOf(before.families, "actuate_executions_total", failures) + 1,
      );
      const echoCount = '{action="test.echo"}';
      expect(histogramCount(after.text, "actuate_execution_duration_seconds", echoCount)).toBe(
        histogramCount(before.text, "actuate_execution_duration_seconds", echoCount) + 2,
      );

      const invoked = { route: "/actions/:name/invoke", status: "200" };
      expect(sampleOf(after.families, "actuate_http_requests_total", invoked)).toBe(
        sampleOf(before.families, "actuate_http_requests_total", invoked) + 3,
      );
      for (const status of ["200", "404"]) {
        const byId = { route: "/executions/:id", status };
        expect(sampleOf(after.families, "actuate_http_requests_total", byId)).toBe(
          sampleOf(before.families, "actuate_http_requests_total", byId) + 1,
        );
      }
      const invokeCount = '{route="/actions/:name/invoke"}';
      expect(histogramCount(after.text, "actuate_http_request_duration_seconds", invokeCount)).toBe(
        histogramCount(before.text, "actuate_http_request_duration_seconds", invokeCount) + 3,
      );
      expect(after.text).not.toContain(echoed.execution.id);
    });

    test("MCP tool calls are counted by tool and outcome; an unknown tool's name is not a label", async () => {
      const client = await mcpClient(t, t.serviceKey);
      try {
        const before = await scrape(t);
        const ok = await client.callTool({ name: "test.echo", arguments: { text: "hi" } });
        expect(ok.isError).toBeFalsy();
        const failed = await client.callTool({ name: "test.fail", arguments: { message: "no" } });
        expect(failed.isError).toBe(true);
        await expect(client.callTool({ name: "made.up-tool", arguments: {} })).rejects.toThrow(/Unknown tool/);
        const after = await scrape(t);
        for (const labels of [
          { tool: "test.echo", outcome: "ok" },
          { tool: "test.fail", outcome: "error" },
          { tool: "unknown", outcome: "unknown_tool" },
        ]) {
          expect(sampleOf(after.families, "actuate_mcp_calls_total", labels)).toBe(
            sampleOf(before.families, "actuate_mcp_calls_total", labels) + 1,
          );
        }
        expect(after.text).not.toContain("made.up-tool");
      } finally {
        await client.close();
      }
    });

    test("open /session sockets are a gauge; the active release is named", async () => {
      const { families } = await scrape(t);
      expect(sampleOf(families, "actuate_live_sockets")).toBe(0);
      expect(families.get("actuate_live_subscriptions")?.type).toBe("GAUGE");
      const release = families.get("actuate_release_info")?.metrics[0];
      expect(release?.value).toBe("1");
      expect(release?.labels?.version).toBe("t1");

      const live = await LiveClient.connect(t.url);
      try {
        live.send({ op: "init", "access-token": t.serviceKey, "client-event-id": "i" });
        await live.op("init-ok");
        expect(sampleOf((await scrape(t)).families, "actuate_live_sockets")).toBe(1);
      } finally {
        live.close();
      }
      await eventually(async () => sampleOf((await scrape(t)).families, "actuate_live_sockets") === 0);
    });

    test("the database pool: its size (10 connections on PostgreSQL, SQLite's one), and writes waiting", async () => {
      await Promise.all(
        Array.from({ length: 20 }, () => t.invoke("test.echo", { text: "load" }, { token: t.serviceKey })),
      );
      const { families } = await scrape(t);
      expect(sampleOf(families, "actuate_db_pool_size")).toBe(dialect.name === "postgres" ? 10 : 1);
      for (const name of ["actuate_db_pool_writes_queued", "actuate_db_pool_batches_in_flight"]) {
        expect(families.get(name)?.type).toBe("GAUGE");
      }
      // Every invoke above was answered after its commit: nothing of them waits any more.
      expect(sampleOf(families, "actuate_db_pool_writes_queued")).toBe(0);
    });
  });
}

describe("GET /metrics: workflows", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialects[0] as (typeof dialects)[number], {
      release: fixture("workflows"),
      env: { METRICS_TOKEN },
    });
  });
  afterAll(() => t.stop());

  test("an ended run counts as a workflow execution, and its wait for a worker is observed", async () => {
    const before = await scrape(t);
    const admitted = await (await t.invoke("wf.steps", { n: 1 })).json();
    const done = await (await t.fetch(`/executions/${admitted.runId}/result`)).json();
    expect(done.status).toBe("succeeded");
    const labels = { action: "wf.steps", kind: "workflow", status: "succeeded" };
    const after = await eventually(async () => {
      const scraped = await scrape(t);
      return sampleOf(scraped.families, "actuate_executions_total", labels) > 0 ? scraped : null;
    }).then((scraped) => scraped as NonNullable<typeof scraped>);
    expect(sampleOf(after.families, "actuate_executions_total", labels)).toBe(
      sampleOf(before.families, "actuate_executions_total", labels) + 1,
    );
    const delays = (text: string) => histogramCount(text, "actuate_workflow_queue_delay_seconds", "");
    expect(delays(after.text)).toBeGreaterThan(delays(before.text));
  }, 15_000);

  test("runs not ended are a gauge by status, read from the database", async () => {
    const sleeping = { status: "sleeping" };
    const before = sampleOf((await scrape(t)).families, "actuate_workflow_runs", sleeping);
    const admitted = await (await t.invoke("wf.nap", { ms: 60_000 })).json();
    await eventually(
      async () => sampleOf((await scrape(t)).families, "actuate_workflow_runs", sleeping) === before + 1,
    );
    expect((await t.fetch(`/runs/${admitted.runId}/cancel`, { method: "POST" })).status).toBe(200);
    await eventually(async () => sampleOf((await scrape(t)).families, "actuate_workflow_runs", sleeping) === before);
  }, 15_000);
});

// Issue #41 §4: in hosting mode the execution counters carry the environment's handle; nothing else does.
for (const dialect of dialects) {
  describe(`GET /metrics: environments (hosting mode, ${dialect.name})`, () => {
    let h: HostingServer;
    beforeAll(async () => {
      h = await startHostingServer(dialect, {
        environments: [
          { handle: "a", organization: "acme", release: fixture("environments") },
          { handle: "b", organization: "beta", release: fixture("environments") },
          { handle: "flows", organization: "beta", release: fixture("workflows") },
        ],
      });
    });
    afterAll(() => h?.stop());

    const scrapeApex = async () => {
      const res = await h.fetch(null, "/metrics");
      expect(res.status).toBe(200);
      const text = await res.text();
      return { text, families: new Map<string, Family>(parsePrometheus(text).map((f) => [f.name, f])) };
    };

    test("actuate_executions_total{environment,action,kind,status}: each environment's own series; HTTP metrics unlabelled", async () => {
      await Promise.all([
        h.invoke("a", "env.whoami", { note: "1" }),
        h.invoke("a", "env.whoami", { note: "2" }),
        h.invoke("b", "env.whoami", { note: "3" }),
      ]);
      const admitted = await (await h.invoke("b", "env.flow", { note: "4" })).json();
      expect((await (await h.fetch("b", `/executions/${admitted.runId}/result`)).json()).status).toBe("succeeded");
      const function_ = (environment: string) => ({
        environment,
        action: "env.whoami",
        kind: "function",
        status: "succeeded",
      });
      const workflow = { environment: "b", action: "env.flow", kind: "workflow", status: "succeeded" };
      const { families, text } = await eventually(async () => {
        const scraped = await scrapeApex();
        return sampleOf(scraped.families, "actuate_executions_total", workflow) === 1 ? scraped : null;
      }).then((scraped) => scraped as NonNullable<typeof scraped>);
      expect(sampleOf(families, "actuate_executions_total", function_("a"))).toBe(2);
      expect(sampleOf(families, "actuate_executions_total", function_("b"))).toBe(1);
      expect(sampleOf(families, "actuate_executions_total", { ...workflow, environment: "a" })).toBe(0);
      // Every execution series names its environment; the HTTP and duration series name none.
      for (const series of families.get("actuate_executions_total")?.metrics ?? []) {
        expect(["a", "b"]).toContain(series.labels?.environment as string);
      }
      for (const series of families.get("actuate_http_requests_total")?.metrics ?? []) {
        expect(series.labels?.environment).toBeUndefined();
      }
      expect(text).not.toMatch(/actuate_execution_duration_seconds[^\n]*environment=/);
    });

    test("actuate_workflow_runs counts the runs not ended of every environment, not environment 1's alone", async () => {
      const sleeping = { status: "sleeping" };
      const before = sampleOf((await scrapeApex()).families, "actuate_workflow_runs", sleeping);
      const admitted = await (await h.invoke("flows", "wf.nap", { ms: 60_000 })).json();
      await eventually(
        async () => sampleOf((await scrapeApex()).families, "actuate_workflow_runs", sleeping) === before + 1,
      );
      expect((await h.fetch("flows", `/runs/${admitted.runId}/cancel`, { method: "POST" })).status).toBe(200);
      await eventually(
        async () => sampleOf((await scrapeApex()).families, "actuate_workflow_runs", sleeping) === before,
      );
    }, 15_000);
  });
}
