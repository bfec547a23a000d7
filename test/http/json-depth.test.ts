import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../../src/lib/json-depth.ts";
import { dialects } from "../support/databases.ts";
import { LiveClient } from "../support/live-client.ts";
import { fixture, startTestServer, type TestResponse, type TestServer } from "../support/server.ts";

/** JSON text of arrays nested `levels` deep. */
const nested = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;

describe("nestsDeeperThan", () => {
  test("counts objects and arrays from the root, and copes with values far too deep for recursion", () => {
    expect(nestsDeeperThan(JSON.parse(nested(MAX_JSON_DEPTH)))).toBe(false);
    expect(nestsDeeperThan(JSON.parse(nested(MAX_JSON_DEPTH + 1)))).toBe(true);
    expect(nestsDeeperThan({ a: { b: [1, "x", null] } }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: { b: [{}] } }, 3)).toBe(true);
    expect(nestsDeeperThan("text")).toBe(false);
    expect(nestsDeeperThan(JSON.parse(nested(200_000)))).toBe(true);
  });
});

for (const dialect of dialects) {
  describe(`JSON nested deeper than ${MAX_JSON_DEPTH} levels (${dialect.name})`, () => {
    let t: TestServer;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic") });
    });
    afterAll(() => t.stop());

    const expectTooDeep = async (response: TestResponse, where: string) => {
      expect(response.status).toBe(400);
      const body = await response.json();
      expect(body).toMatchObject({ ok: false, error: "invalid_request" });
      expect(body.details.issues[0]).toMatchObject({ where, code: "too_deep" });
      return body;
    };

    test("an invoke is 400 invalid_request (it was a 500 from the fingerprint), refused before anything reads it", async () => {
      const requestId = crypto.randomUUID();
      const body = `{"requestId":"${requestId}","input":{"text":${nested(30_000)}}}`;
      const response = await t.fetch("/actions/test.echo/invoke", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      const answer = await expectTooDeep(response, "");
      expect(answer).toMatchObject({ requestId: null, executionId: null });
      // Within the limit the same shape is just a validation failure.
      const shallow = await t.invoke("test.echo", { text: JSON.parse(nested(10)) });
      expect((await shallow.json()).error).toBe("action_contract_validation_failed");
    });

    test("a multipart invoke's request part and a query are refused the same way", async () => {
      const form = new FormData();
      form.set("request", `{"requestId":"${crypto.randomUUID()}","input":{"note":${nested(30_000)}}}`);
      form.set("picture", new File(["png"], "a.png", { type: "image/png" }));
      const multipart = await t.fetch("/actions/test.attach/invoke", { method: "POST", body: form });
      await expectTooDeep(multipart, "/request");
      const query = await t.fetch("/query", { method: "POST", body: `{"query":{"notes":${nested(50_000)}}}` });
      await expectTooDeep(query, "");
    });

    const mcp = (body: string) =>
      t.fetch("/mcp", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
        },
        body,
      });

    test("over MCP a too-deep message is -32600 and too-deep tool arguments a readable tool error", async () => {
      const message = await mcp(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":${nested(30_000)}}}`);
      expect(message.status).toBe(400);
      expect((await message.json()).error).toMatchObject({ code: -32600 });
      const call = await mcp(
        `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test.echo","arguments":{"text":${nested(30_000)}}}}`,
      );
      expect(call.status).toBe(200);
      const { result } = await call.json();
      expect(result.isError).toBe(true);
      const refusal = JSON.parse(result.content[0].text);
      expect(refusal).toMatchObject({ error: "action_contract_validation_failed" });
      expect(refusal.details.issues[0]).toMatchObject({ where: "/input", code: "too_deep" });
    });

    test("a socket message is answered with an error and the socket stays usable", async () => {
      const client = await LiveClient.connect(t.url);
      try {
        client.send(`{"op":"add-query","q":${nested(50_000)}}`);
        const error = await client.op("error");
        expect(error).toMatchObject({ status: 400 });
        expect(String(error.message)).toContain(`${MAX_JSON_DEPTH} levels`);
        client.send({ op: "init", "access-token": t.serviceKey });
        expect(await client.op("init-ok")).toBeDefined();
      } finally {
        client.close();
      }
    });

    test("a socket message that is a top-level array, however deep, is answered as no JSON object (5,000 deep got no answer)", async () => {
      const client = await LiveClient.connect(t.url);
      try {
        for (const levels of [1_000, 5_000, 100_000]) {
          client.send(nested(levels));
          const error = await client.op("error");
          expect(error).toMatchObject({ status: 400, error: "invalid_request" });
          expect(error.message).toBe("each message must be one JSON object");
        }
        client.send({ op: "init", "access-token": t.serviceKey });
        expect(await client.op("init-ok")).toBeDefined();
      } finally {
        client.close();
      }
    });
  });
}
