import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openGate, runsOf } from "../fixtures/releases/basic/lib/probe.ts";
import { dialects } from "../support/databases.ts";
import { answerSchemas } from "../support/openapi-schemas.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

for (const dialect of dialects) {
  describe(`executions (${dialect.name})`, () => {
    let t: TestServer;
    let alice: string;
    let bob: string;
    let matches: Awaited<ReturnType<typeof answerSchemas>>;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic") });
      alice = await t.userToken("alice");
      bob = await t.userToken("bob");
      matches = await answerSchemas(t);
    });
    afterAll(() => t.stop());

    test("a user sees only its own executions; a service key sees every one", async () => {
      const requestId = crypto.randomUUID();
      const mine = await (await t.invoke("test.echo", { text: "alice's" }, { requestId, token: alice })).json();
      const id = mine.execution.id;

      expect((await t.fetch(`/executions/${id}`, { token: alice })).status).toBe(200);
      for (const path of [`/executions/${id}`, `/executions/${id}/result`, `/executions/requests/${requestId}`]) {
        const res = await t.fetch(path, { token: bob });
        expect(res.status).toBe(404);
        expect(await res.json()).toMatchObject({ ok: false, error: "execution_not_found" });
      }
      const bobs = await (await t.fetch("/executions?limit=200", { token: bob })).json();
      expect(bobs.items.some((e: { id: string }) => e.id === id)).toBe(false);
      const alices = await (await t.fetch("/executions?limit=200", { token: alice })).json();
      expect(alices.items.map((e: { id: string }) => e.id)).toContain(id);
      expect(alices.items.every((e: { principal: { id: string } }) => e.principal.id === "alice")).toBe(true);

      expect((await t.fetch(`/executions/${id}`)).status).toBe(200);
      const all = await (await t.fetch("/executions?limit=200")).json();
      expect(all.items.map((e: { id: string }) => e.id)).toContain(id);
      // By request id is per caller: the service key's own request ids, not alice's.
      expect((await t.fetch(`/executions/requests/${requestId}`)).status).toBe(404);
      const found = await (await t.fetch(`/executions/requests/${requestId}`, { token: alice })).json();
      expect(found.id).toBe(id);
      matches(mine.execution, "Execution");
      matches(found, "Execution");
      matches(all, "ExecutionPage");
    });

    test("lists leave out inputs, outputs and error messages over 4 KiB, with their size; the execution by id has them", async () => {
      const carol = await t.userToken("carol-lists");
      const big = "x".repeat(10_000);
      const echoed = (await (await t.invoke("test.echo", { text: big }, { token: carol })).json()).execution;
      const failed = (await (await t.invoke("test.fail", { message: big }, { token: carol })).json()).execution;
      const small = (await (await t.invoke("test.echo", { text: "small" }, { token: carol })).json()).execution;
      const listed = await (await t.fetch("/executions", { token: carol })).json();
      matches(listed, "ExecutionPage");
      const { items } = listed;
      const byId = new Map(items.map((item: { id: string }) => [item.id, item]));
      const listedEcho = byId.get(echoed.id) as Record<string, unknown>;
      expect(listedEcho.input).toBeUndefined();
      expect(listedEcho.output).toBeUndefined();
      expect(listedEcho.inputTruncated).toEqual({ bytes: expect.any(Number) });
      expect((listedEcho.inputTruncated as { bytes: number }).bytes).toBeGreaterThan(10_000);
      expect((listedEcho.outputTruncated as { bytes: number }).bytes).toBeGreaterThan(10_000);
      const listedFail = byId.get(failed.id) as Record<string, unknown>;
      expect(listedFail).toMatchObject({
        status: "failed",
        errorCode: "action_failed",
        errorMessageTruncated: { bytes: 10_000 },
      });
      expect(listedFail.errorMessage).toBeUndefined();
      expect(byId.get(small.id)).toMatchObject({ input: { text: "small" }, output: { text: "small" } });
      expect((byId.get(small.id) as Record<string, unknown>).inputTruncated).toBeUndefined();
      const whole = await (await t.fetch(`/executions/${echoed.id}`, { token: carol })).json();
      matches(whole, "Execution");
      expect(whole.input.text).toHaveLength(10_000);
      expect(whole.output.text).toHaveLength(10_000);
      expect((await (await t.fetch(`/executions/${failed.id}`, { token: carol })).json()).errorMessage).toBe(big);
    });

    test("unknown ids are 404 execution_not_found", async () => {
      for (const path of ["/executions/nope", `/executions/${crypto.randomUUID()}/result`, "/executions/requests/x"]) {
        const res = await t.fetch(path);
        expect(res.status).toBe(404);
        expect(await res.json()).toMatchObject({ ok: false, error: "execution_not_found" });
      }
    });

    test("the list is newest first and pages by cursor without gaps or repeats, with filters", async () => {
      const carol = await t.userToken("carol");
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        const action = i % 3 === 0 ? "test.fail" : "test.echo";
        const input = i % 3 === 0 ? { message: `no ${i}` } : { text: `item ${i}` };
        ids.push((await (await t.invoke(action, input, { token: carol })).json()).execution.id);
      }
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = cursor ? `?limit=3&cursor=${cursor}` : "?limit=3";
        const page = await (await t.fetch(`/executions${query}`, { token: carol })).json();
        expect(page.items.length).toBeLessThanOrEqual(3);
        seen.push(...page.items.map((e: { id: string }) => e.id));
        cursor = page.nextCursor;
        pages++;
      } while (cursor);
      expect(pages).toBe(3);
      expect(seen).toEqual([...ids].reverse());

      const failed = await (await t.fetch("/executions?status=failed", { token: carol })).json();
      expect(failed.items.map((e: { id: string }) => e.id)).toEqual([ids[6], ids[3], ids[0]]);
      const echoes = await (await t.fetch("/executions?action=test.echo&limit=2", { token: carol })).json();
      expect(echoes.items.map((e: { id: string }) => e.id)).toEqual([ids[5], ids[4]]);
      expect(echoes.nextCursor).toBeString();
    });

    test("bad paging parameters are 400 invalid_request naming the parameter", async () => {
      for (const query of [
        "limit=0",
        "limit=201",
        "limit=abc",
        "status=done",
        "cursor=!!",
        "cursor=bm90LWEtdXVpZA",
        "x=1",
      ]) {
        const res = await t.fetch(`/executions?${query}`);
        expect(res.status).toBe(400);
        const body = await res.json();
        expect(body).toMatchObject({ ok: false, error: "invalid_request" });
        const param = query.split("=")[0];
        expect(body.details.issues[0]).toMatchObject({ where: `/query/${param}`, code: "invalid" });
        expect(body.message).toContain(param);
      }
      const several = await (await t.fetch("/executions?limit=0&status=done")).json();
      expect(several.details.issues.map((issue: { where: string }) => issue.where).sort()).toEqual([
        "/query/limit",
        "/query/status",
      ]);
    });

    test("without a credential a bad query string is 401, not a 400 that answers before the credential is checked", async () => {
      for (const path of ["/executions?limit=0", "/runs?x=1", "/storage/signed-download-url?x=1"]) {
        const res = await t.fetch(path, { token: null });
        expect(res.status, path).toBe(401);
      }
    });

    test("GET /executions/{id}/result answers the execution once it has ended", async () => {
      const body = await (await t.invoke("test.echo", { text: "done" })).json();
      const res = await t.fetch(`/executions/${body.execution.id}/result`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ id: body.execution.id, status: "succeeded", output: { text: "done" } });
    });
  });

  describe(`a function still running at WAIT_MS (${dialect.name})`, () => {
    let t: TestServer;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic"), env: { WAIT_MS: "150" } });
    });
    afterAll(() => t.stop());

    test("invoke answers 202 with status running; the result endpoint times out with 504, then answers", async () => {
      const gate = crypto.randomUUID();
      const counter = crypto.randomUUID();
      const requestId = crypto.randomUUID();
      const res = await t.invoke("test.count", { key: counter, gate }, { requestId });
      expect(res.status).toBe(202);
      const body = await res.json();
      expect(body.kind).toBe("function");
      expect(body.execution.status).toBe("running");
      expect(body.execution.output).toBeUndefined();
      expect(body.statusUrl).toBe(`${t.url}/executions/${body.execution.id}`);

      const timeout = await t.fetch(`/executions/${body.execution.id}/result`);
      expect(timeout.status).toBe(504);
      expect(await timeout.json()).toMatchObject({
        ok: false,
        error: "execution_result_timeout",
        executionId: body.execution.id,
      });

      // A replay while it still runs waits the same way and names the same execution.
      const replay = await t.invoke("test.count", { key: counter, gate }, { requestId });
      expect(replay.status).toBe(202);
      expect((await replay.json()).execution.id).toBe(body.execution.id);

      const waiting = t.fetch(`/executions/${body.execution.id}/result`);
      openGate(gate);
      const result = await waiting;
      expect(result.status).toBe(200);
      expect(await result.json()).toMatchObject({ status: "succeeded", output: { runs: 1 } });
      expect(runsOf(counter)).toBe(1);
      const followed = await eventually(async () => {
        const e = await (await t.fetch(`/executions/${body.execution.id}`)).json();
        return e.status === "succeeded" ? e : null;
      });
      expect(followed.finishedAt).toBeString();
    });

    test("a running execution, as stored, has no finishedAt yet", async () => {
      const gate = crypto.randomUUID();
      const res = await t.invoke("test.count", { key: crypto.randomUUID(), gate });
      expect(res.status).toBe(202);
      const { id } = (await res.json()).execution;
      const stored = await (await t.fetch(`/executions/${id}`)).json();
      openGate(gate);
      expect(stored).toMatchObject({ status: "running", finishedAt: null });
      expect(stored.startedAt).toBeString();
    });
  });
}
