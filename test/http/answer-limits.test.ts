import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dialects } from "../support/databases.ts";
import { LiveClient } from "../support/live-client.ts";
import { mcpClient } from "../support/mcp-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

// Issue #46 item 6: nothing bounded what one answer may hold. A query answers at most QUERY_MAX_ROWS
// entities and QUERY_MAX_BYTES of them (refused past either, whatever asks: HTTP, MCP, ctx.db.query, a
// live query), and an output is stored only up to MAX_OUTPUT_BYTES. The limits are set low here; the
// defaults are 32,000 entities, 16 MiB and 8 MiB.

const MAX_ROWS = 5;
const MAX_BYTES = 4096;
const MAX_OUTPUT = 2048;

for (const dialect of dialects) {
  describe(`query answers are bounded (${dialect.name})`, () => {
    let t: TestServer;
    let ada = "";

    const query = async (q: unknown) => {
      const res = await t.fetch("/query?format=objects", { method: "POST", body: JSON.stringify({ query: q }) });
      return { status: res.status, body: await res.json() };
    };
    const tooManyRows = {
      ok: false,
      error: "data_provider_rejected",
      message: expect.stringContaining(`more than ${MAX_ROWS} entities (QUERY_MAX_ROWS)`),
      details: { limitRows: MAX_ROWS },
    };

    beforeAll(async () => {
      t = await startTestServer(dialect, {
        release: fixture("data"),
        env: { QUERY_MAX_ROWS: String(MAX_ROWS), QUERY_MAX_BYTES: String(MAX_BYTES) },
      });
      ada = (await (await t.invoke("data.add-user", { email: "ada@example.com", name: "Ada" })).json()).execution.output
        .id;
      for (let priority = 1; priority <= MAX_ROWS; priority++) {
        const added = await t.invoke("data.add-note", { title: `note ${priority}`, priority, authorId: ada });
        expect((await added.json()).execution.status).toBe("succeeded");
      }
    });
    afterAll(() => t.stop());

    test("an answer of more entities than QUERY_MAX_ROWS, at every level together, is refused; within it, answered", async () => {
      expect(await query({ notes: {} })).toMatchObject({ status: 200, body: { notes: { length: MAX_ROWS } } });
      expect(await query({ notes: {}, users: {} })).toEqual({ status: 400, body: tooManyRows });
      expect(await query({ users: { notes: {} } })).toEqual({ status: 400, body: tooManyRows });
      const paged = await query({ users: { notes: { $: { limit: MAX_ROWS - 1 } } } });
      expect(paged.status).toBe(200);
      expect(paged.body.users[0].notes).toHaveLength(MAX_ROWS - 1);
      // The triple format counts the same entities.
      const triples = await t.fetch("/query", {
        method: "POST",
        body: JSON.stringify({ query: { users: { notes: {} } } }),
      });
      expect(triples.status).toBe(400);
      expect(await triples.json()).toEqual(tooManyRows);
    });

    test("an answer whose entities hold more than QUERY_MAX_BYTES is refused", async () => {
      const body = "b".repeat(MAX_BYTES / 2);
      const added = await t.invoke("data.add-note", { title: "long", priority: 10, body }, { token: t.serviceKey });
      const id = (await added.json()).execution.output.id;
      const one = { notes: { $: { where: { id } } } };
      expect(await query(one)).toMatchObject({ status: 200, body: { notes: [{ id, body }] } });
      const tooLarge = await t.invoke("data.change", {
        call: "update",
        args: ["notes", id, { body: `${body}${body}` }],
      });
      expect((await tooLarge.json()).execution.status).toBe("succeeded");
      expect(await query(one)).toEqual({
        status: 400,
        body: {
          ok: false,
          error: "data_provider_rejected",
          message: expect.stringContaining(`more than ${MAX_BYTES} bytes of entities (QUERY_MAX_BYTES)`),
          details: { limitBytes: MAX_BYTES },
        },
      });
      await t.invoke("data.change", { call: "delete", args: ["notes", id] });
    });

    test("the MCP query tool, ctx.db.query and a live add-query are refused the same way", async () => {
      const mcp = await mcpClient(t, t.serviceKey);
      try {
        const result = await mcp.callTool({ name: "query", arguments: { query: { notes: {}, users: {} } } });
        expect(result.isError).toBe(true);
        const text = (result.content as { text: string }[])[0]?.text ?? "null";
        expect(JSON.parse(text)).toMatchObject({ error: "data_provider_rejected", details: { limitRows: MAX_ROWS } });
      } finally {
        await mcp.close();
      }

      const inAction = await (await t.invoke("data.query", { query: { notes: {}, users: {} } })).json();
      expect(inAction.execution).toMatchObject({
        status: "failed",
        errorCode: "action_failed",
        errorMessage: expect.stringContaining("QUERY_MAX_ROWS"),
      });

      const client = await LiveClient.connect(t.url);
      try {
        client.send({ op: "init", "access-token": t.serviceKey });
        await client.op("init-ok");
        client.send({ op: "add-query", q: { notes: {}, users: {} } });
        expect(await client.op("error")).toMatchObject({ status: 400, error: "data_provider_rejected" });
      } finally {
        client.close();
      }
    });
  });

  describe(`outputs are bounded (${dialect.name})`, () => {
    let t: TestServer;
    const over = "o".repeat(MAX_OUTPUT);
    const message = (what: string) => `${what} is larger than ${MAX_OUTPUT} bytes as JSON, the most an output may hold`;

    beforeAll(async () => {
      t = await startTestServer(dialect, {
        release: fixture("large-values"),
        env: { MAX_OUTPUT_BYTES: String(MAX_OUTPUT) },
      });
    });
    afterAll(() => t.stop());

    test("an action whose output is over MAX_OUTPUT_BYTES fails with a fixed message, and the output is not stored", async () => {
      const fits = await (await t.invoke("big.echo", { text: "o".repeat(MAX_OUTPUT - 20) })).json();
      expect(fits.execution.status).toBe("succeeded");
      const answer = await (await t.invoke("big.echo", { text: over })).json();
      expect(answer.execution).toMatchObject({
        status: "failed",
        errorCode: "action_failed",
        errorMessage: message("the action's output"),
      });
      expect(answer.execution.output).toBeUndefined();
      expect((await t.store.executions.get(answer.execution.id))?.output).toBeNull();
    });

    test("ctx.schedule refuses an input over it where it is called; nothing is scheduled", async () => {
      const scheduledBy = async (executionId: string) =>
        (await (await t.fetch("/scheduled?limit=200")).json()).items.filter(
          (s: { scheduledBy: string | null }) => s.scheduledBy === executionId,
        );
      const fits = await (await t.invoke("big.later", { text: "o".repeat(MAX_OUTPUT - 20) })).json();
      expect(fits.execution.status).toBe("succeeded");
      expect(await scheduledBy(fits.execution.id)).toHaveLength(1);
      const answer = await (await t.invoke("big.later", { text: over })).json();
      expect(answer.execution).toMatchObject({
        status: "failed",
        errorCode: "action_failed",
        errorMessage: `ctx.schedule: the input is larger than ${MAX_OUTPUT} bytes as JSON, the most an action may hand on`,
      });
      expect(await scheduledBy(answer.execution.id)).toEqual([]);
    });

    test("a workflow whose output, or a step's result, is over it fails the same way", async () => {
      const ended = async (input: unknown) => {
        const { runId } = await (await t.invoke("big.copy", input)).json();
        return eventually(async () => {
          const run = await (await t.fetch(`/runs/${runId}`)).json();
          return run.status === "running" || run.status === "queued" ? null : run;
        }, 30_000);
      };
      expect(await ended({ text: over, steps: 0 })).toMatchObject({
        status: "failed",
        output: null,
        errorMessage: message("the workflow's output"),
      });
      const stepped = await ended({ text: over, steps: 1 });
      expect(stepped).toMatchObject({ status: "failed", errorMessage: message(`step "copy 0"'s result`) });
      expect(stepped.steps.every((step: { output: unknown }) => step.output === null)).toBe(true);
    });
  });
}
