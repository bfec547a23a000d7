import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openGate, runsOf } from "../fixtures/releases/basic/lib/probe.ts";
import { dialects } from "../support/databases.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const key = () => crypto.randomUUID();

for (const dialect of dialects) {
  describe(`invoke (${dialect.name})`, () => {
    let t: TestServer;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic") });
    });
    afterAll(() => t.stop());

    test("a function answers 200 with kind, execution, uploads and statusUrl", async () => {
      const requestId = crypto.randomUUID();
      const res = await t.invoke("test.echo", { text: "hi", n: 2 }, { requestId });
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body.kind).toBe("function");
      expect(body.uploads).toEqual([]);
      expect(body.execution).toMatchObject({
        requestId,
        action: "test.echo",
        kind: "function",
        status: "succeeded",
        output: { text: "hi", n: 2 },
        releaseVersion: "t1",
        principal: { kind: "service" },
      });
      expect(body.execution.errorCode).toBeUndefined();
      expect(body.statusUrl).toBe(`${t.url}/executions/${body.execution.id}`);
      const followed = await (await t.fetch(new URL(body.statusUrl).pathname)).json();
      expect(followed).toMatchObject({ id: body.execution.id, status: "succeeded", output: { text: "hi", n: 2 } });
    });

    test("the handler sees the caller and its execution", async () => {
      const requestId = crypto.randomUUID();
      const body = await (await t.invoke("test.whoami", {}, { requestId, token: await t.userToken("alice") })).json();
      expect(body.execution.output).toEqual({ kind: "user", id: "alice", executionId: body.execution.id, requestId });
    });

    test("a replay with the same input returns the first execution and does not run the handler again", async () => {
      const requestId = crypto.randomUUID();
      const counter = key();
      const first = await (await t.invoke("test.count", { key: counter }, { requestId })).json();
      const again = await t.invoke("test.count", { key: counter }, { requestId });
      expect(again.status).toBe(200);
      const second = await again.json();
      expect(second.execution.id).toBe(first.execution.id);
      expect(second.execution.output).toEqual({ runs: 1 });
      expect(runsOf(counter)).toBe(1);
    });

    test("a requestId is compared case-insensitively", async () => {
      const requestId = crypto.randomUUID();
      const counter = key();
      const first = await (await t.invoke("test.count", { key: counter }, { requestId })).json();
      const second = await (
        await t.invoke("test.count", { key: counter }, { requestId: requestId.toUpperCase() })
      ).json();
      expect(second.execution.id).toBe(first.execution.id);
      expect(runsOf(counter)).toBe(1);
    });

    test("50 identical concurrent requests run the handler once and all name the same execution", async () => {
      const requestId = crypto.randomUUID();
      const counter = key();
      const gate = key();
      const responses = Array.from({ length: 50 }, () => t.invoke("test.count", { key: counter, gate }, { requestId }));
      await eventually(() => runsOf(counter) === 1);
      openGate(gate);
      const bodies = await Promise.all(
        responses.map(async (r) => {
          const res = await r;
          expect(res.status).toBe(200);
          return res.json();
        }),
      );
      expect(new Set(bodies.map((b) => b.execution.id)).size).toBe(1);
      expect(bodies.every((b) => b.execution.status === "succeeded" && b.execution.output.runs === 1)).toBe(true);
      expect(runsOf(counter)).toBe(1);
    });

    test("a reused requestId with a different input is 409 REQUEST_CONFLICT naming the execution", async () => {
      const requestId = crypto.randomUUID();
      const first = await (await t.invoke("test.echo", { text: "a" }, { requestId })).json();
      const res = await t.invoke("test.echo", { text: "b" }, { requestId });
      expect(res.status).toBe(409);
      expect(await res.json()).toMatchObject({
        ok: false,
        error: "REQUEST_CONFLICT",
        executionId: first.execution.id,
        requestId,
      });
      const other = await t.invoke("test.whoami", {}, { requestId });
      expect(other.status).toBe(409);
      const kept = await (await t.fetch(`/executions/${first.execution.id}`)).json();
      expect(kept.output).toEqual({ text: "a" });
    });

    test("the same requestId from two callers is two executions", async () => {
      const requestId = crypto.randomUUID();
      const a = await (await t.invoke("test.whoami", {}, { requestId, token: await t.userToken("alice") })).json();
      const b = await (await t.invoke("test.whoami", {}, { requestId, token: await t.userToken("bob") })).json();
      expect(a.execution.id).not.toBe(b.execution.id);
      expect(b.execution.output.id).toBe("bob");
    });

    test("input that does not fit the schema is 400 with issues as JSON pointers, and nothing is recorded", async () => {
      const requestId = crypto.randomUUID();
      const res = await t.invoke("test.echo", { text: "", n: -1, extra: true }, { requestId });
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(body).toMatchObject({ ok: false, error: "action_contract_validation_failed", requestId });
      const wheres = body.details.issues.map((i: { where: string }) => i.where).sort();
      expect(wheres).toEqual(["/input/extra", "/input/n", "/input/text"]);
      for (const issue of body.details.issues) {
        expect(typeof issue.code).toBe("string");
        expect(typeof issue.message).toBe("string");
      }
      const missing = await (await t.invoke("test.echo", {})).json();
      expect(missing.details.issues).toContainEqual(
        expect.objectContaining({ where: "/input/text", code: "object_required_property" }),
      );
      expect((await t.fetch(`/executions/requests/${requestId}`)).status).toBe(404);
    });

    test("U+0000 and lone surrogates are refused in input on every database, and an output holding one fails", async () => {
      for (const text of ["a\u0000b", "\ud800", "x\udc00"]) {
        const res = await t.invoke("test.echo", { text });
        expect(res.status).toBe(400);
        expect((await res.json()).details.issues).toContainEqual(
          expect.objectContaining({ where: "/input/text", code: "unsupported_character" }),
        );
      }
      // A well-formed pair (an emoji) is fine.
      expect((await (await t.invoke("test.echo", { text: "\ud83d\ude00" })).json()).execution.status).toBe("succeeded");
      const failed = await (await t.invoke("test.nul", {})).json();
      expect(failed.execution).toMatchObject({ status: "failed", errorCode: "action_failed" });
      expect(failed.execution.errorMessage).toContain("/output/text");
    });

    test("a failing action still answers 200 with status failed, action_failed and its message", async () => {
      const res = await t.invoke("test.fail", { message: "the printer is on fire" });
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body.execution).toMatchObject({
        status: "failed",
        errorCode: "action_failed",
        errorMessage: "the printer is on fire",
      });
      expect(body.execution.output).toBeUndefined();
    });

    test("an output that breaks the output schema fails the execution", async () => {
      const body = await (await t.invoke("test.bad-output", {})).json();
      expect(body.execution.status).toBe("failed");
      expect(body.execution.errorCode).toBe("action_failed");
      expect(body.execution.errorMessage).toContain("/output/ok");
    });

    test("file fields are listed in the contract, not in its input; a JSON invoke of them is file_required", async () => {
      const contract = await (await t.fetch("/actions/test.attach/contract")).json();
      expect(contract.files).toEqual([
        { field: "picture", required: true, maxBytes: 5_000_000, contentTypes: ["image/png", "image/jpeg"] },
        { field: "extra", required: false, maxBytes: null, contentTypes: [] },
      ]);
      expect(Object.keys(contract.input.properties)).toEqual(["note"]);
      const res = await t.invoke("test.attach", { note: "hi" });
      expect(res.status).toBe(400);
      expect((await res.json()).details.issues).toEqual([
        expect.objectContaining({ where: "/input/picture", code: "file_required" }),
      ]);
    });

    test("the contract names schemas, hash and file limits; unknown actions are 404", async () => {
      const res = await t.fetch("/actions/test.echo/contract");
      expect(res.status).toBe(200);
      const contract = await res.json();
      expect(contract).toMatchObject({
        name: "test.echo",
        kind: "function",
        description: "Returns its input",
        files: [],
      });
      expect(contract.input).toMatchObject({ type: "object", additionalProperties: false, required: ["text"] });
      expect(contract.contractHash).toMatch(/^[0-9a-f]{64}$/);
      const unknown = await t.fetch("/actions/test.nope/contract");
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toMatchObject({ ok: false, error: "action_not_found" });
      const invoked = await t.invoke("test.nope", {});
      expect(invoked.status).toBe(404);
      expect(await invoked.json()).toMatchObject({ ok: false, error: "action_not_found" });
    });

    test("every invoke error names requestId (null when none was readable) and executionId (null)", async () => {
      const post = (body: string, headers: Record<string, string> = {}) =>
        t.fetch("/actions/test.echo/invoke", {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body,
        });
      const requestId = key();
      const cases: [Response | Awaited<ReturnType<typeof post>>, number, string, string | null][] = [
        [await post("{not json"), 400, "invalid_request", null],
        [await post(JSON.stringify({ requestId: "nope", input: {} })), 400, "invalid_request", null],
        [await post(JSON.stringify({ requestId })), 400, "invalid_request", requestId],
        [await post(JSON.stringify({ requestId, input: { text: "x" }, extra: 1 })), 400, "invalid_request", requestId],
        [await post("x".repeat(8 * 1024 * 1024 + 1)), 413, "payload_too_large", null],
        [
          await post(JSON.stringify({ requestId, input: { text: 1 } })),
          400,
          "action_contract_validation_failed",
          requestId,
        ],
      ];
      for (const [response, status, error, id] of cases) {
        expect(response.status).toBe(status);
        const body = await response.json();
        expect(body).toMatchObject({ ok: false, error, requestId: id, executionId: null });
        expect("requestId" in body && "executionId" in body).toBe(true);
      }
    });
  });
}
