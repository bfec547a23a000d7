import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { Glob } from "bun";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { loggable, publicErrorOf } from "../../src/lib/database-errors.ts";
import { ERROR_STATUS, type ErrorCode, PublicError } from "../../src/lib/errors.ts";
import { dialects } from "../support/databases.ts";
import { LiveClient } from "../support/live-client.ts";
import { mcpClient } from "../support/mcp-client.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

const ROOT = join(import.meta.dir, "..", "..");

/** Codes an execution ends with (`execution.errorCode`, answered 200): not refusals, so not in the table. */
const EXECUTION_ERROR_CODES = ["action_failed", "execution_interrupted", "run_canceled"];

const sources = async () => {
  const files: { path: string; text: string }[] = [];
  for await (const path of new Glob("src/**/*.ts").scan(ROOT)) {
    files.push({ path, text: await Bun.file(join(ROOT, path)).text() });
  }
  return files;
};

describe("the error table", () => {
  test("every code a refusal is built with is in the table, and every code in the table is used", async () => {
    const built = new Set<string>();
    const literals = new Set<string>();
    for (const { path, text } of await sources()) {
      // The client's own codes (network_error, upload_failed) are what it tells its caller, not server answers;
      // observe/ builds metrics (`new Counter("actuate_…")`), never a refusal.
      if (path === "src/lib/errors.ts" || path.startsWith("src/client/") || path.startsWith("src/observe/")) continue;
      // The first argument of whatever builds a refusal: PublicError and its subclasses, errorResponse, MCP's refusal.
      const builders = text.includes("PublicError")
        ? /(?:new \w+|errorResponse|refusal|super)\(\s*"(\w+)"/g
        : /(?:new \w+|errorResponse|refusal)\(\s*"(\w+)"/g;
      for (const m of text.matchAll(builders)) built.add(m[1] as string);
      for (const m of text.matchAll(/"(\w+)"/g)) literals.add(m[1] as string);
    }
    const table = Object.keys(ERROR_STATUS);
    expect([...built].filter((code) => !table.includes(code) && !EXECUTION_ERROR_CODES.includes(code))).toEqual([]);
    expect(built.size).toBeGreaterThan(10);
    expect(table.filter((code) => !literals.has(code))).toEqual([]);
  });

  test("docs/decisions/errors.md's error table is this table", async () => {
    const doc = await Bun.file(join(ROOT, "docs", "decisions", "errors.md")).text();
    const rows = [...doc.matchAll(/^\| `(\w+)` \| (\d{3}) \|/gm)].map((m) => [m[1], Number(m[2])]);
    expect(Object.fromEntries(rows)).toEqual(ERROR_STATUS);
  });
});

async function liveClient(t: TestServer, token: string): Promise<LiveClient> {
  const client = await LiveClient.connect(t.url);
  client.send({ op: "init", "access-token": token });
  await client.op("init-ok");
  return client;
}

interface Answer {
  status?: number;
  code: string;
  message: string;
}

const overHttp = async (response: Response): Promise<Answer> => {
  const body = (await response.json()) as { ok: boolean; error: string; message: string };
  expect(body.ok).toBe(false);
  return { status: response.status, code: body.error, message: body.message };
};

const overMcp = (result: unknown): Answer => {
  const { isError, content } = result as { isError?: boolean; content: { text: string }[] };
  expect(isError).toBe(true);
  const body = JSON.parse(content[0]?.text ?? "null") as { error: string; message: string };
  return { code: body.error, message: body.message };
};

const overSocket = async (client: LiveClient, eventId: string): Promise<Answer> => {
  const error = await client.next((m) => m.op === "error" && m["client-event-id"] === eventId);
  return { status: error.status, code: error.error, message: error.message };
};

/** The same refusal says the same code and message everywhere, with the table's status where there is one. */
function expectAlike(code: ErrorCode, ...answers: Answer[]) {
  for (const answer of answers) {
    expect(answer).toEqual({
      ...(answer.status === undefined ? {} : { status: ERROR_STATUS[code] }),
      code,
      message: answers[0]?.message as string,
    });
  }
}

for (const dialect of dialects) {
  describe(`one refusal, one answer over HTTP, MCP and /session (${dialect.name})`, () => {
    let t: TestServer;
    let alice: string;
    let mcp: Client;
    let live: LiveClient;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("access") });
      alice = await t.userToken("alice");
      mcp = await mcpClient(t, alice);
      live = await liveClient(t, alice);
    });
    afterAll(async () => {
      live.close();
      await mcp.close();
      await t.stop();
    });

    test("a query the data layer refuses is data_provider_rejected (400)", async () => {
      const query = { nothing: {} };
      const http = await overHttp(
        await t.fetch("/query", { method: "POST", token: alice, body: JSON.stringify({ query }) }),
      );
      const tool = overMcp(await mcp.callTool({ name: "query", arguments: { query } }));
      live.send({ op: "add-query", q: query, "client-event-id": "rejected" });
      const socket = await overSocket(live, "rejected");
      expectAlike("data_provider_rejected", http, tool, socket);
    });

    test("an action the caller may not run is access_denied (403)", async () => {
      const http = await overHttp(await t.invoke("admin.reset", {}, { token: alice }));
      const tool = overMcp(await mcp.callTool({ name: "admin.reset", arguments: {} }));
      expectAlike("access_denied", http, tool);
    });

    test("an execution the caller cannot see is execution_not_found (404)", async () => {
      const id = Bun.randomUUIDv7();
      const http = await overHttp(await t.fetch(`/executions/${id}`, { token: alice }));
      live.send({ op: "subscribe-stream", "execution-id": id, "client-event-id": "unseen" });
      const socket = await overSocket(live, "unseen");
      expectAlike("execution_not_found", http, socket);
    });
  });

  describe(`with nothing published (${dialect.name})`, () => {
    let t: TestServer;
    beforeAll(async () => {
      t = await startTestServer(dialect);
    });
    afterAll(() => t.stop());

    test("a query is no_active_release (503) over HTTP, MCP and /session", async () => {
      const token = await t.userToken("alice");
      const query = { notes: {} };
      const http = await overHttp(await t.fetch("/query", { method: "POST", token, body: JSON.stringify({ query }) }));
      const mcp = await mcpClient(t, token);
      const tool = overMcp(await mcp.callTool({ name: "query", arguments: { query } }));
      await mcp.close();
      const live = await liveClient(t, token);
      live.send({ op: "add-query", q: query, "client-event-id": "nothing" });
      const socket = await overSocket(live, "nothing");
      live.close();
      expectAlike("no_active_release", http, tool, socket);
    });
  });
}

describe("what a caller is told of a thrown error", () => {
  test("a refused connection, bare or wrapped by drizzle, is database_unavailable; a refusal stays itself; a bug is null", async () => {
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = probe.port;
    probe.stop(true);
    const client = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, {
      max: 1,
      connect_timeout: 2,
      onnotice: () => {},
    });
    const bare = await client`select 1`.catch((error: unknown) => error);
    const wrapped = await drizzle({ client })
      .execute(sql`select ${"secret"}::text`)
      .catch((error: unknown) => error);
    await client.end({ timeout: 1 });
    for (const error of [bare, wrapped]) {
      expect(publicErrorOf(error)).toMatchObject({ code: "database_unavailable", status: 503 });
    }
    expect(loggable(wrapped)).not.toContain("secret");
    const refusal = new PublicError("access_denied", "no");
    expect(publicErrorOf(refusal)).toBe(refusal);
    expect(publicErrorOf(new TypeError("a bug"))).toBeNull();
  });

  test("what is logged of an error without a stack (a DOMException's is empty) is its name and message", () => {
    expect(loggable(new DOMException("The connection was closed.", "AbortError"))).toBe(
      "AbortError: The connection was closed.",
    );
  });
});
