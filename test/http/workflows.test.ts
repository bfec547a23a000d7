import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dialects } from "../support/databases.ts";
import { effects } from "../support/effects.ts";
import { mcpClient } from "../support/mcp-client.ts";
import { answerSchemas } from "../support/openapi-schemas.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

for (const dialect of dialects) {
  describe(`workflows (${dialect.name})`, () => {
    let server: TestServer;
    let scratch: string;
    let matches: Awaited<ReturnType<typeof answerSchemas>>;
    const file = (name: string) => join(scratch, `${name}-${crypto.randomUUID()}`);

    beforeAll(async () => {
      scratch = mkdtempSync(join(tmpdir(), "actuate-wf-"));
      server = await startTestServer(dialect, { release: fixture("workflows") });
      matches = await answerSchemas(server);
    });
    afterAll(async () => {
      await server.stop();
      rmSync(scratch, { recursive: true, force: true });
    });

    const run = async (id: string, token?: string | null) => (await server.fetch(`/runs/${id}`, { token })).json();
    const ended = (id: string, timeoutMs = 10_000) =>
      eventually(async () => {
        const view = await run(id);
        return ["succeeded", "failed", "canceled"].includes(view.status) ? view : null;
      }, timeoutMs);

    test("invoke answers 202 once the run is admitted; the steps are checkpointed and the execution follows the run", async () => {
      const log = file("log");
      const res = await server.invoke("wf.steps", { n: 1, log });
      expect(res.status).toBe(202);
      const body = await res.json();
      expect(body.kind).toBe("workflow");
      expect(body.runId).toBe(body.execution.id);
      expect(body.statusUrl).toBe(`${server.url}/runs/${body.runId}`);
      expect(["queued", "running", "succeeded"]).toContain(body.execution.status);

      const result = await (await server.fetch(`/executions/${body.runId}/result`)).json();
      expect(result.status).toBe("succeeded");
      expect(result.output).toEqual({ total: 21 });

      const view = await run(body.runId);
      expect(view).toMatchObject({
        id: body.runId,
        workflow: "wf.steps",
        releaseVersion: "w1",
        status: "succeeded",
        input: { n: 1, log },
        output: { total: 21 },
        errorCode: null,
      });
      expect(view.steps.map((s: { name: string }) => s.name)).toEqual(["one", "two", "three"]);
      for (const step of view.steps) {
        expect(step).toMatchObject({ kind: "step", status: "succeeded", attempts: 1, error: null });
        expect(Date.parse(step.finishedAt)).toBeGreaterThanOrEqual(Date.parse(step.startedAt));
      }
      expect(view.steps.map((s: { output: unknown }) => s.output)).toEqual([2, { value: 20 }, 21]);
      expect(effects(log).map((e) => e.step)).toEqual(["one", "two", "three"]);

      // The step's ctx.db write committed with its checkpoint.
      const query = await server.fetch("/query?format=objects", {
        method: "POST",
        body: JSON.stringify({ query: { marks: { $: { where: { runId: body.runId } } } } }),
      });
      expect((await query.json()).marks).toMatchObject([{ runId: body.runId, step: "two" }]);
    });

    test("requestId: the same input answers the same run without running it again; another input is 409", async () => {
      const log = file("log");
      const requestId = crypto.randomUUID();
      const first = await (await server.invoke("wf.steps", { n: 2, log }, { requestId })).json();
      await ended(first.runId);
      const again = await server.invoke("wf.steps", { n: 2, log }, { requestId });
      expect(again.status).toBe(202);
      const replay = await again.json();
      expect(replay.runId).toBe(first.runId);
      expect(replay.execution.status).toBe("succeeded");
      const conflict = await server.invoke("wf.steps", { n: 3, log }, { requestId });
      expect(conflict.status).toBe(409);
      expect(await conflict.json()).toMatchObject({ ok: false, error: "REQUEST_CONFLICT", executionId: first.runId });
      expect(effects(log)).toHaveLength(3);
    });

    test("concurrent identical invocations admit one run", async () => {
      const log = file("log");
      const requestId = crypto.randomUUID();
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => server.invoke("wf.steps", { n: 5, log }, { requestId })),
      );
      const ids = new Set(await Promise.all(answers.map(async (r) => (await r.json()).runId)));
      expect(answers.every((r) => r.status === 202)).toBe(true);
      expect(ids.size).toBe(1);
      await ended([...ids][0] as string);
      expect(effects(log)).toHaveLength(3);
    });

    const marksOf = async (runId: string) => {
      const res = await server.fetch("/query?format=objects", {
        method: "POST",
        body: JSON.stringify({ query: { marks: { $: { where: { runId } } } } }),
      });
      return ((await res.json()).marks as { step: string }[]).map((m) => m.step);
    };

    test("a failing step is retried with backoff, then succeeds; only the attempt that succeeded keeps its writes", async () => {
      const { runId } = await (await server.invoke("wf.flaky", { failures: 2, retries: 2, backoffMs: 20 })).json();
      const view = await ended(runId);
      expect(view.status).toBe("succeeded");
      expect(view.output).toEqual({ attempt: 3 });
      expect(view.steps).toMatchObject([{ name: "call", status: "succeeded", attempts: 3, output: 3 }]);
      expect(await marksOf(runId)).toEqual(["call-3"]);
    });

    test("a step that keeps failing fails the run with action_failed and the step's message", async () => {
      const { runId } = await (await server.invoke("wf.flaky", { failures: 9, retries: 1, backoffMs: 20 })).json();
      const view = await ended(runId);
      expect(view).toMatchObject({ status: "failed", errorCode: "action_failed", errorMessage: "attempt 2 failed" });
      expect(view.steps).toMatchObject([{ name: "call", status: "failed", attempts: 2, error: "attempt 2 failed" }]);
      expect(await marksOf(runId)).toEqual([]);
      const execution = await (await server.fetch(`/executions/${runId}`)).json();
      expect(execution).toMatchObject({
        status: "failed",
        errorCode: "action_failed",
        errorMessage: "attempt 2 failed",
      });
    });

    test("a durable sleep suspends the run (sleeping) and resumes it when due", async () => {
      const log = file("log");
      const { runId } = await (await server.invoke("wf.nap", { ms: 400, log })).json();
      const sleeping = await eventually(async () => {
        const view = await run(runId);
        return view.status === "sleeping" ? view : null;
      });
      expect(sleeping.steps).toMatchObject([
        { name: "before", status: "succeeded" },
        { name: "pause", kind: "sleep", status: "sleeping" },
      ]);
      const view = await ended(runId);
      expect(view.status).toBe("succeeded");
      expect(view.output.sleptMs).toBeGreaterThanOrEqual(400);
      expect(view.steps.map((s: { status: string }) => s.status)).toEqual(["succeeded", "succeeded", "succeeded"]);
      expect(effects(log).map((e) => e.step)).toEqual(["before", "after"]);
    });

    test("a restart during a durable sleep resumes the run at the right time", async () => {
      const log = file("log");
      const { runId } = await (await server.invoke("wf.nap", { ms: 700, log })).json();
      await eventually(async () => (await run(runId)).status === "sleeping");
      await server.restart();
      const view = await ended(runId);
      expect(view.status).toBe("succeeded");
      expect(view.output.sleptMs).toBeGreaterThanOrEqual(700);
      expect(effects(log).map((e) => e.step)).toEqual(["before", "after"]);
    });

    test("cancel stops a running run at its step boundary and aborts the step's signal", async () => {
      const log = file("log");
      const { runId } = await (await server.invoke("wf.gated", { gate: file("gate"), log })).json();
      await eventually(() => effects(log).some((e) => e.step === "wait"));
      const res = await server.fetch(`/runs/${runId}/cancel`, { method: "POST" });
      expect(res.status).toBe(200);
      expect((await res.json()).cancelRequested).toBe(true);
      const view = await ended(runId);
      expect(view).toMatchObject({ status: "canceled", errorCode: "run_canceled", cancelRequested: true });
      // The step the cancel interrupted ends canceled too, rather than running forever.
      expect(view.steps).toMatchObject([
        { name: "first", status: "succeeded" },
        { name: "wait", status: "canceled", finishedAt: expect.any(String) },
      ]);
      expect(effects(log).map((e) => `${e.step}${e.phase ? `:${e.phase}` : ""}`)).toEqual([
        "first",
        "wait:start",
        "wait:aborted",
      ]);
      const execution = await (await server.fetch(`/executions/${runId}/result`)).json();
      expect(execution.status).toBe("canceled");
      // Canceling again changes nothing; a run that succeeded cannot be canceled.
      expect((await server.fetch(`/runs/${runId}/cancel`, { method: "POST" })).status).toBe(200);
      const done = await (await server.invoke("wf.steps", { n: 1 })).json();
      await ended(done.runId);
      const refused = await server.fetch(`/runs/${done.runId}/cancel`, { method: "POST" });
      expect(refused.status).toBe(409);
      expect(await refused.json()).toMatchObject({ ok: false, error: "run_not_cancelable" });
    });

    test("cancel ends a sleeping run at once, its sleep canceled", async () => {
      const { runId } = await (await server.invoke("wf.nap", { ms: 60_000 })).json();
      await eventually(async () => (await run(runId)).status === "sleeping");
      const view = await (await server.fetch(`/runs/${runId}/cancel`, { method: "POST" })).json();
      matches(view, "Run");
      expect(view).toMatchObject({ status: "canceled", cancelRequested: true, finishedAt: expect.any(String) });
      expect(view.steps).toMatchObject([
        { name: "before", status: "succeeded" },
        { name: "pause", kind: "sleep", status: "canceled", finishedAt: view.finishedAt },
      ]);
      expect(await run(runId)).toEqual(view);
      expect((await (await server.fetch(`/executions/${runId}`)).json()).status).toBe("canceled");
    });

    test("cancel ends a run backing off between attempts at once, its step canceled", async () => {
      const { runId } = await (await server.invoke("wf.flaky", { failures: 9, retries: 3, backoffMs: 60_000 })).json();
      await eventually(async () => (await run(runId)).steps[0]?.status === "retrying");
      const view = await (await server.fetch(`/runs/${runId}/cancel`, { method: "POST" })).json();
      expect(view).toMatchObject({ status: "canceled", cancelRequested: true });
      expect(view.steps).toMatchObject([
        { name: "call", status: "canceled", attempts: 1, error: "attempt 1 failed", finishedAt: view.finishedAt },
      ]);
    });

    test("a run stays on the release it started with when another is activated mid-run", async () => {
      const { runId } = await (await server.invoke("wf.pinned", { ms: 500 })).json();
      await eventually(async () => (await run(runId)).status === "sleeping");
      await server.publish(fixture("workflows-next"));
      await eventually(() => server.server.releases.current()?.version === "w2");
      const fresh = await (await server.invoke("wf.pinned", { ms: 0 })).json();
      const view = await ended(runId);
      expect(view).toMatchObject({ status: "succeeded", releaseVersion: "w1", output: { code: "w1/w1" } });
      expect(await ended(fresh.runId)).toMatchObject({ releaseVersion: "w2", output: { code: "w2/w2" } });
      await server.publish(fixture("workflows"));
      await eventually(() => server.server.releases.current()?.version === "w1");
    });

    test("a step name used twice, or a step result that is not JSON, fails the run with a clear message", async () => {
      const twice = await (await server.invoke("wf.misuse", { mistake: "twice" })).json();
      expect(await ended(twice.runId)).toMatchObject({
        status: "failed",
        errorCode: "action_failed",
        errorMessage: 'the name "same" is used twice in this run',
      });
      const notJson = await (await server.invoke("wf.misuse", { mistake: "not-json" })).json();
      const view = await ended(notJson.runId);
      expect(view.status).toBe("failed");
      expect(view.errorMessage).toStartWith('step "big"\'s result is not JSON');
    });

    test("the run's own ctx.db writes inside a step's function commit with that step; outside a step they are refused", async () => {
      const marks = async (runId: string) => {
        const res = await server.fetch("/query?format=objects", {
          method: "POST",
          body: JSON.stringify({ query: { marks: { $: { where: { runId } } } } }),
        });
        return (await res.json()).marks;
      };
      const inStep = await (await server.invoke("wf.run-db", { where: "step" })).json();
      const view = await ended(inStep.runId);
      expect(view).toMatchObject({ status: "succeeded", steps: [{ name: "write", status: "succeeded" }] });
      expect(await marks(inStep.runId)).toMatchObject([{ id: view.output.id, runId: inStep.runId, step: "step" }]);

      const inBody = await (await server.invoke("wf.run-db", { where: "body" })).json();
      const refused = await ended(inBody.runId);
      expect(refused).toMatchObject({ status: "failed", errorCode: "action_failed" });
      expect(refused.errorMessage).toStartWith("ctx.db.create outside a step");
      expect(refused.errorMessage).toContain('await step("save", () => ctx.db.create(…))');
      expect(await marks(inBody.runId)).toEqual([]);
    });

    test("a run is visible to its caller and service keys only; bad ids and missing credentials are refused", async () => {
      const alice = await server.userToken("alice");
      const bob = await server.userToken("bob");
      const { runId } = await (await server.invoke("wf.nap", { ms: 60_000 }, { token: alice })).json();
      expect((await server.fetch(`/runs/${runId}`, { token: alice })).status).toBe(200);
      expect((await server.fetch(`/runs/${runId}`)).status).toBe(200);
      for (const [path, method] of [
        [`/runs/${runId}`, "GET"],
        [`/runs/${runId}/cancel`, "POST"],
      ] as const) {
        const hidden = await server.fetch(path, { method, token: bob });
        expect(hidden.status).toBe(404);
        expect(await hidden.json()).toMatchObject({ ok: false, error: "run_not_found" });
        const anonymous = await server.fetch(path, { method, token: null });
        expect(anonymous.status).toBe(401);
        expect((await anonymous.json()).ok).toBe(false);
      }
      expect((await run(runId)).status).not.toBe("canceled");
      for (const id of ["nope", "12345", crypto.randomUUID()]) {
        const res = await server.fetch(`/runs/${id}`);
        expect(res.status).toBe(404);
        expect(await res.json()).toMatchObject({ ok: false, error: "run_not_found" });
      }
      await server.fetch(`/runs/${runId}/cancel`, { method: "POST", token: alice });
    });

    test("GET /runs lists the caller's runs newest first, by page, with filters; others' runs are not listed", async () => {
      const carol = await server.userToken("list-carol");
      const dave = await server.userToken("list-dave");
      const invoke = async (action: string, input: unknown) =>
        (await (await server.invoke(action, input, { token: carol })).json()).runId as string;
      const one = await invoke("wf.steps", { n: 1 });
      const two = await invoke("wf.steps", { n: 2 });
      const napping = await invoke("wf.nap", { ms: 60_000 });
      const three = await invoke("wf.steps", { n: 3 });
      for (const id of [one, two, three]) await ended(id);
      await eventually(async () => (await run(napping)).status === "sleeping");
      const list = async (query: string, token: string | undefined = carol) =>
        (await server.fetch(`/runs${query}`, { token })).json();
      const ids = (page: { items: { id: string }[] }) => page.items.map((r) => r.id);

      const first = await list("?limit=2");
      expect(ids(first)).toEqual([three, napping]);
      expect(first.items[0]).toMatchObject({ workflow: "wf.steps", status: "succeeded", output: { total: 41 } });
      expect(first.items[0].statusUrl).toBe(`${server.url}/runs/${three}`);
      expect(first.items[0].steps).toBeUndefined();
      const second = await list(`?limit=2&cursor=${first.nextCursor}`);
      expect(ids(second)).toEqual([two, one]);
      expect(second.nextCursor).toBeNull();
      expect(ids(await list("?status=sleeping"))).toEqual([napping]);
      expect(ids(await list("?workflow=wf.steps"))).toEqual([three, two, one]);
      expect(ids(await list("", dave))).toEqual([]);
      expect(ids(await list("?limit=200", server.serviceKey))).toEqual(
        expect.arrayContaining([one, two, three, napping]),
      );
      for (const bad of ["?limit=0", "?limit=x", "?status=bogus", "?cursor=bm9wZQ", "?sort=id"]) {
        const res = await server.fetch(`/runs${bad}`, { token: carol });
        expect(res.status, bad).toBe(400);
        expect(await res.json()).toMatchObject({ ok: false, error: "invalid_request" });
      }
      await server.fetch(`/runs/${napping}/cancel`, { method: "POST", token: carol });
    });

    const mcp = async (method: string, params: Record<string, unknown>, token?: string) => {
      const res = await server.fetch("/mcp", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
        token,
      });
      return res.json();
    };

    test("GET /runs leaves out an input or output over 4 KiB, with its size; GET /runs/{id} has it whole", async () => {
      const dana = await server.userToken("runs-dana");
      const text = "x".repeat(10_000);
      const big = (await (await server.invoke("wf.measure", { text }, { token: dana })).json()).runId;
      const small = (await (await server.invoke("wf.measure", { text: "s" }, { token: dana })).json()).runId;
      expect((await ended(big)).output).toEqual({ length: 10_000 });
      await ended(small);
      const page = await (await server.fetch("/runs", { token: dana })).json();
      matches(page, "RunPage");
      const byId = new Map(page.items.map((r: { id: string }) => [r.id, r]));
      const listed = byId.get(big) as Record<string, unknown>;
      expect(listed.input).toBeUndefined();
      expect((listed.inputTruncated as { bytes: number }).bytes).toBeGreaterThan(10_000);
      expect(listed.output).toEqual({ length: 10_000 });
      expect(byId.get(small)).toMatchObject({ input: { text: "s" }, output: { length: 1 } });
      expect((byId.get(small) as Record<string, unknown>).inputTruncated).toBeUndefined();
      const whole = await (await server.fetch(`/runs/${big}`, { token: dana })).json();
      matches(whole, "Run");
      expect(whole.input.text).toHaveLength(10_000);
    });

    test("over MCP a workflow answers its admission; the run is a resource its caller can read", async () => {
      const alice = await server.userToken("mcp-alice");
      const { result } = await mcp("tools/call", { name: "wf.steps", arguments: { n: 4 } }, alice);
      expect(result.isError).toBeUndefined();
      const admitted = result.structuredContent;
      expect(admitted.statusUrl).toBe(`${server.url}/runs/${admitted.runId}`);
      expect(admitted.resource).toBe(`service://local/runs/${admitted.runId}`);
      expect(result._meta["dev.service/execution"].id).toBe(admitted.runId);
      expect(result.content).toContainEqual(
        expect.objectContaining({ type: "resource_link", uri: admitted.resource, mimeType: "application/json" }),
      );

      // The tool's description is the action's own; that it answers at admission is said beside it.
      const tool = (await mcp("tools/list", {}, alice)).result.tools.find(
        (t: { name: string }) => t.name === "wf.steps",
      );
      const contract = await (await server.fetch("/actions/wf.steps/contract")).json();
      expect(tool.description).toBe(contract.description);
      expect(tool.annotations.title).toContain("workflow");
      expect(tool._meta["dev.service/action"]).toEqual({
        kind: "workflow",
        access: "authenticated",
        action: "wf.steps",
      });

      const templates = (await mcp("resources/templates/list", {}, alice)).result.resourceTemplates;
      expect(templates).toContainEqual(expect.objectContaining({ uriTemplate: "service://local/runs/{runId}" }));
      const read = await eventually(async () => {
        const { result: resource } = await mcp("resources/read", { uri: admitted.resource }, alice);
        const run = JSON.parse(resource.contents[0].text);
        return run.status === "succeeded" ? run : null;
      });
      expect(read).toMatchObject({ id: admitted.runId, output: { total: 51 }, steps: [{}, {}, {}] });

      // Another user's run, or no run at all, is the same "not found".
      const bob = await server.userToken("mcp-bob");
      for (const [uri, token] of [
        [admitted.resource, bob],
        [`service://local/runs/${crypto.randomUUID()}`, alice],
        ["service://local/runs/not-a-run", alice],
      ] as const) {
        const { error } = await mcp("resources/read", { uri }, token);
        expect(error).toMatchObject({ code: -32002 });
      }
    });

    test("the MCP run resource leaves out values over 4 KiB with their size and steps past its budget; GET /runs/{id} has them whole", async () => {
      const erin = await server.userToken("mcp-erin");
      const client = await mcpClient(server, erin);
      try {
        const readRun = async (runId: string) => {
          const read = await client.readResource({ uri: `service://local/runs/${runId}` });
          const text = (read.contents[0] as { text: string }).text;
          return { text, run: JSON.parse(text) };
        };
        const started = async (input: unknown) => {
          const result = await client.callTool({ name: "wf.large", arguments: input as Record<string, unknown> });
          const { runId } = result.structuredContent as { runId: string };
          await ended(runId, 30_000);
          return runId;
        };

        // Megabytes of input, output and step outputs: the agent gets their sizes and where to read them.
        const huge = "h".repeat(1024 * 1024);
        const hugeRun = await started({ text: huge, steps: 3 });
        const { text, run } = await readRun(hugeRun);
        expect(text.length).toBeLessThan(8 * 1024);
        expect(run).toMatchObject({ id: hugeRun, status: "succeeded", statusUrl: `${server.url}/runs/${hugeRun}` });
        expect(run.input).toBeUndefined();
        expect(run.inputTruncated.bytes).toBeGreaterThan(huge.length);
        expect(run.output).toBeUndefined();
        expect(run.outputTruncated).toEqual({ bytes: JSON.stringify({ text: huge }).length });
        expect(run.steps).toHaveLength(3);
        for (const step of run.steps) {
          expect(step).toMatchObject({ status: "succeeded", outputTruncated: { bytes: huge.length + 2 } });
          expect(step.output).toBeUndefined();
        }
        expect(run.stepsTruncated).toBeUndefined();
        const whole = await (await server.fetch(`/runs/${hugeRun}`, { token: erin })).json();
        expect(whole.output.text).toBe(huge);
        expect(whole.steps.map((step: { output: string }) => step.output)).toEqual([huge, huge, huge]);

        // Values under the bound are shown, and steps until their budget; the others are counted.
        const medium = "m".repeat(4000);
        const manyRun = await started({ text: medium, steps: 100 });
        const many = await readRun(manyRun);
        expect(many.run.input).toEqual({ text: medium, steps: 100 });
        expect(many.run.output).toEqual({ text: medium });
        const shown = many.run.steps.length;
        expect(shown).toBeGreaterThan(30);
        expect(shown).toBeLessThan(100);
        expect(many.run.stepsTruncated).toEqual({ shown, total: 100 });
        expect(many.run.steps.every((step: { output: string }) => step.output === medium)).toBe(true);
        expect(many.text.length).toBeLessThan(300 * 1024);
        expect((await (await server.fetch(`/runs/${manyRun}`, { token: erin })).json()).steps).toHaveLength(100);
      } finally {
        await client.close();
      }
    }, 60_000);

    test("workers resume a run from its checkpoints after a restart of the server", async () => {
      const log = file("log");
      const gatePath = file("gate");
      const { runId } = await (await server.invoke("wf.gated", { gate: gatePath, log })).json();
      await eventually(() => effects(log).some((e) => e.step === "wait"));
      // A graceful stop halts the run and lets go of its lease; the next server resumes it at once.
      await server.restart();
      writeFileSync(gatePath, "");
      const view = await ended(runId);
      expect(view.status).toBe("succeeded");
      const steps = effects(log).map((e) => `${e.step}${e.phase ? `:${e.phase}` : ""}`);
      expect(steps.filter((s) => s === "first")).toHaveLength(1);
      expect(steps.filter((s) => s === "last")).toHaveLength(1);
      expect(view.steps.find((s: { name: string }) => s.name === "wait").attempts).toBe(2);
    });
  });
}
