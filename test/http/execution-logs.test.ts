import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { runResourceUri } from "../../src/mcp/uris.ts";
import { openGate } from "../fixtures/releases/basic/lib/probe.ts";
import { dialects } from "../support/databases.ts";
import { LiveClient } from "../support/live-client.ts";
import { mcpClient } from "../support/mcp-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

interface Line {
  seq: number;
  at: string;
  level: string;
  step: string | null;
  line: string;
}

/** Every line of an execution's log, a page of `limit` at a time, as `token` reads them. */
async function readAll(t: TestServer, id: string, token?: string, limit = 3): Promise<Line[]> {
  const lines: Line[] = [];
  let cursor: string | null = null;
  for (;;) {
    const query: string = cursor === null ? `?limit=${limit}` : `?limit=${limit}&cursor=${cursor}`;
    const page = await (await t.fetch(`/executions/${id}/logs${query}`, { token })).json();
    lines.push(...page.items);
    if (page.nextCursor === null || page.items.length === 0) return lines;
    cursor = page.nextCursor;
  }
}

// WAIT_MS: a gated invocation answers `running` soon instead of holding the request.
const LIMITS = { EXECUTION_LOG_LINES: "10", EXECUTION_LOG_BYTES: "2048", WAIT_MS: "300" };

for (const dialect of dialects) {
  describe(`execution logs (${dialect.name})`, () => {
    let t: TestServer;
    let alice: string;
    let bob: string;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic"), env: LIMITS });
      alice = await t.userToken("alice");
      bob = await t.userToken("bob");
    });
    afterAll(() => t.stop());

    test("ctx.log lines are kept with their execution, in order and with levels, paged by cursor", async () => {
      const { execution } = await (await t.invoke("test.logs", { lines: 5 }, { token: alice })).json();
      expect(execution.status).toBe("succeeded");
      const lines = await readAll(t, execution.id, alice, 2);
      expect(lines.map((l) => [l.seq, l.level, l.line])).toEqual([
        [0, "info", "line 0"],
        [1, "warn", "line 1"],
        [2, "error", 'line 2 {"i":2}'],
        [3, "info", "line 3"],
        [4, "warn", "line 4"],
      ]);
      expect(lines.every((l) => l.step === null && !Number.isNaN(Date.parse(l.at)))).toBe(true);
      const whole = await (await t.fetch(`/executions/${execution.id}/logs`, { token: alice })).json();
      expect(whole).toEqual({ items: lines, nextCursor: null });
    });

    test("only the caller (or a service key) reads an execution's log; bad paging is a 400", async () => {
      const { execution } = await (await t.invoke("test.logs", { lines: 1 }, { token: alice })).json();
      const path = `/executions/${execution.id}/logs`;
      const anonymous = await t.fetch(path, { token: null });
      expect(anonymous.status).toBe(401);
      expect(await anonymous.json()).toMatchObject({ ok: false });
      const other = await t.fetch(path, { token: bob });
      expect(other.status).toBe(404);
      expect(await other.json()).toMatchObject({ ok: false, error: "execution_not_found" });
      expect((await (await t.fetch(path)).json()).items).toHaveLength(1);
      for (const bad of ["?cursor=nope", `?cursor=${Buffer.from("seq:x").toString("base64url")}`, "?limit=0"]) {
        const res = await t.fetch(`${path}${bad}`, { token: alice });
        expect(res.status).toBe(400);
        expect(await res.json()).toMatchObject({ ok: false });
      }
      const unknown = await t.fetch(`/executions/${crypto.randomUUID()}/logs`, { token: alice });
      expect(unknown.status).toBe(404);
    });

    test("a running execution's lines are stored as it runs; its cursor stays until it has ended", async () => {
      const gate = crypto.randomUUID();
      const { execution } = await (await t.invoke("test.logs", { lines: 2, gate }, { token: alice })).json();
      expect(execution.status).toBe("running");
      const path = `/executions/${execution.id}/logs`;
      const running = await eventually(async () => {
        const page = await (await t.fetch(path, { token: alice })).json();
        return page.items.length === 2 ? page : null;
      });
      expect(running.nextCursor).not.toBeNull();
      openGate(gate);
      await eventually(
        async () => (await (await t.fetch(`/executions/${execution.id}`)).json()).status === "succeeded",
      );
      const rest = await (await t.fetch(`${path}?cursor=${running.nextCursor}`, { token: alice })).json();
      expect(rest).toEqual({ items: [expect.objectContaining({ seq: 2, line: "after the gate" })], nextCursor: null });
    });

    test("past EXECUTION_LOG_LINES or EXECUTION_LOG_BYTES one truncated line is kept, then no more", async () => {
      const many = (await (await t.invoke("test.logs", { lines: 25 })).json()).execution;
      const lines = await readAll(t, many.id, undefined, 200);
      expect(lines).toHaveLength(11);
      expect(lines.at(-2)?.line).toBe("line 9");
      expect(lines.at(-1)).toMatchObject({ seq: 10, level: "warn", line: expect.stringContaining("log truncated") });

      const wide = (await (await t.invoke("test.logs", { lines: 8, text: "x".repeat(500) })).json()).execution;
      const kept = await readAll(t, wide.id, undefined, 200);
      // Lines of about 500 bytes under a 2048-byte bound: four fit, the fifth is refused and truncation said instead.
      expect(kept).toHaveLength(5);
      expect(kept.slice(0, 4).map((l) => l.line.slice(0, 5))).toEqual(["xxxxx", "xxxxx", "xxxxx", "xxxxx"]);
      expect(kept.at(-1)?.line).toContain("log truncated");
    });

    test("a failed execution's log ends with the error and its stack; errorMessage stays the handler's message", async () => {
      const failed = (await (await t.invoke("test.logs", { lines: 2, fail: "kaput" })).json()).execution;
      expect(failed).toMatchObject({ status: "failed", errorCode: "action_failed", errorMessage: "kaput" });
      const lines = await readAll(t, failed.id);
      expect(lines.map((l) => l.line).slice(0, 2)).toEqual(["line 0", "line 1"]);
      const last = lines.at(-1) as Line;
      expect(last.level).toBe("error");
      expect(last.line).toStartWith("the handler threw: Error: kaput\n");
      expect(last.line).toMatch(/\n\s+at .*\(actions\/test\/logs\.ts:\d+/);
      // The caller reads this line: the release's frames only, named relative to the release.
      expect(last.line).not.toContain("/src/");
      expect(last.line).not.toContain("node_modules");
      expect(last.line).not.toContain("/bundles/");

      // Past the bound too: the error line is kept after the truncated one.
      const noisy = (await (await t.invoke("test.logs", { lines: 30, fail: "loud" })).json()).execution;
      const noisyLines = await readAll(t, noisy.id, undefined, 200);
      expect(noisyLines.map((l) => l.level).slice(-2)).toEqual(["warn", "error"]);
      expect(noisyLines.at(-1)?.line).toStartWith("the handler threw: Error: loud");
    });

    test("subscribe-stream sends the lines live, and the same lines are read back after", async () => {
      const gate = crypto.randomUUID();
      const { id } = (await (await t.invoke("test.logs", { lines: 0, gate })).json()).execution;
      const client = await LiveClient.connect(t.url);
      client.send({ op: "init", "access-token": t.serviceKey });
      await client.op("init-ok");
      client.send({ op: "subscribe-stream", "execution-id": id });
      expect(await client.op("stream-append")).toMatchObject({ status: "running" });
      openGate(gate);
      const streamed = await client.next((m) => m.op === "stream-append" && m.log !== undefined);
      await client.next((m) => m.op === "stream-append" && m.done === true);
      client.close();
      const [stored] = await readAll(t, id);
      expect(stored).toMatchObject({ line: streamed.log, at: new Date(streamed.at).toISOString() });
    });
  });

  describe(`workflow run logs (${dialect.name})`, () => {
    let w: TestServer;
    beforeAll(async () => {
      w = await startTestServer(dialect, { release: fixture("workflows"), env: { WORKFLOW_POLL_MS: "50" } });
    });
    afterAll(() => w.stop());

    const ended = (id: string) =>
      eventually(async () => {
        const run = await (await w.fetch(`/runs/${id}`)).json();
        return ["succeeded", "failed"].includes(run.status) ? run : null;
      }, 10_000);

    test("the run view shows each step's lines, and the run's own lines outside steps", async () => {
      const { runId } = await (await w.invoke("wf.logged", {})).json();
      const run = await ended(runId);
      expect(run.status).toBe("succeeded");
      expect(run.logs.map((l: Line) => l.line)).toEqual(["starting"]);
      const byStep = Object.fromEntries(run.steps.map((s: { name: string; logs: Line[] }) => [s.name, s.logs]));
      expect(byStep.greet.map((l: Line) => [l.level, l.line])).toEqual([
        ["info", "hello from greet"],
        ["warn", "greet warns"],
      ]);
      expect(byStep.finish.map((l: Line) => l.line)).toEqual(["in finish"]);
      const all = await readAll(w, runId, undefined, 200);
      expect(all.map((l) => [l.step, l.line])).toEqual([
        [null, "starting"],
        ["greet", "hello from greet"],
        ["greet", "greet warns"],
        ["finish", "in finish"],
      ]);
    }, 20_000);

    test("a failed step's lines end with its stack; the MCP run resource shows the lines of each step", async () => {
      const { runId } = await (await w.invoke("wf.logged", { fail: "no luck" })).json();
      const run = await ended(runId);
      expect(run).toMatchObject({ status: "failed", errorMessage: "no luck" });
      const finish = run.steps.find((s: { name: string }) => s.name === "finish");
      expect(finish.logs.at(-1).level).toBe("error");
      expect(finish.logs.at(-1).line).toStartWith('step "finish" attempt 1 threw: Error: no luck\n');
      expect(finish.logs.at(-1).line).toMatch(/\n\s+at .*logged\.ts:\d+/);

      const client = await mcpClient(w, w.serviceKey);
      try {
        const read = await client.readResource({ uri: runResourceUri(w.config.handle, runId) });
        const resource = JSON.parse((read.contents[0] as { text: string }).text);
        expect(resource.logs.map((l: Line) => l.line)).toEqual(["starting"]);
        expect(resource.steps.find((s: { name: string }) => s.name === "greet").logs).toHaveLength(2);
        expect(resource.steps.find((s: { name: string }) => s.name === "finish").logs.at(-1).level).toBe("error");
      } finally {
        await client.close();
      }
    }, 20_000);
  });

  describe(`retention (${dialect.name})`, () => {
    let r: TestServer;
    beforeAll(async () => {
      r = await startTestServer(dialect, {
        release: fixture("basic"),
        env: { EXECUTION_RETENTION: "1s", WAIT_MS: "300" },
      });
    });
    afterAll(() => r.stop());

    test("an ended execution is forgotten after EXECUTION_RETENTION with its log; a running one never", async () => {
      const gate = crypto.randomUUID();
      const running = (await (await r.invoke("test.logs", { lines: 1, gate })).json()).execution;
      const requestId = crypto.randomUUID();
      const done = (await (await r.invoke("test.logs", { lines: 2 }, { requestId })).json()).execution;
      expect(done.status).toBe("succeeded");
      expect(await r.store.executionLogs.page(done.id, -1, 10)).toHaveLength(2);
      await eventually(async () => (await r.fetch(`/executions/${done.id}`)).status === 404, 15_000);
      expect(await r.store.executionLogs.page(done.id, -1, 10)).toEqual([]);
      expect((await r.fetch(`/executions/${done.id}/logs`)).status).toBe(404);
      // Its idempotency key went with it: the same request runs again, as a new execution.
      const again = (await (await r.invoke("test.logs", { lines: 2 }, { requestId })).json()).execution;
      expect(again.id).not.toBe(done.id);

      // Still running more than the retention after it started: kept, with its lines.
      const runningNow = await (await r.fetch(`/executions/${running.id}`)).json();
      expect(runningNow.status).toBe("running");
      expect((await readAll(r, running.id)).map((l) => l.line)).toEqual(["line 0"]);
      openGate(gate);
    }, 30_000);
  });
}
