import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { openGate } from "../fixtures/releases/basic/lib/probe.ts";
import { cli, serve } from "../support/cli.ts";
import { type Dialect, dialects, executeStatements, selectRows } from "../support/databases.ts";
import { LiveClient } from "../support/live-client.ts";
import { mcpClient } from "../support/mcp-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";

// An error no code path expects (a bug, a table gone) must reach no client as its text: that text is the
// server's (a failed statement, its parameters, a stack), not the caller's. Each adapter answers it with
// a fixed message, and the log has the stack and the ids that find the request.

const ACCEPT = "application/json, text/event-stream";
const MODERN = "2026-07-28";

type Line = { msg: string } & Record<string, unknown>;

/** Drops tables under the running server, as an operator's mistake would: every statement on them then fails. */
const dropTables = (dialect: Dialect, url: string, tables: string[]) =>
  executeStatements(
    url,
    tables.map((table) => `drop table ${table}${dialect.name === "postgres" ? " cascade" : ""};`).join("\n"),
  );

/** A 2026-07-28 request as a conforming client sends it: `_meta` in the body, its headers mirrored. */
function modernRequest(method: string, params: Record<string, unknown>, named: string) {
  return {
    headers: {
      "content-type": "application/json",
      accept: ACCEPT,
      "mcp-protocol-version": MODERN,
      "mcp-method": method,
      "mcp-name": named,
    },
    body: {
      jsonrpc: "2.0",
      id: "modern-1",
      method,
      params: {
        ...params,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": MODERN,
          "io.modelcontextprotocol/clientInfo": { name: "raw", version: "0" },
          "io.modelcontextprotocol/clientCapabilities": { extensions: { "io.modelcontextprotocol/tasks": {} } },
        },
      },
    },
  };
}

for (const dialect of dialects) {
  describe(`an unexpected error is never told, over any adapter (${dialect.name})`, () => {
    let t: TestServer;
    let mcp: Client;
    const lines: Line[] = [];
    let runId: string;

    /** The first line logged that `match` takes, once it is. */
    const logged = (match: (line: Line) => boolean) => eventually(() => lines.find(match)) as Promise<Line>;
    /** The error line of the request sent with `X-Request-Id: reqId`. */
    const errorLine = (reqId: string) => logged((l) => l.level === "error" && l.reqId === reqId);

    const postMcp = (body: unknown, headers: Record<string, string>, reqId: string) =>
      t.fetch("/mcp", { method: "POST", headers: { ...headers, "x-request-id": reqId }, body: JSON.stringify(body) });
    const postLegacy = (body: unknown, reqId: string) =>
      postMcp(
        body,
        { "content-type": "application/json", accept: ACCEPT, "mcp-protocol-version": "2025-11-25" },
        reqId,
      );

    beforeAll(async () => {
      t = await startTestServer(dialect, {
        release: fixture("workflows"),
        env: { HANDLE: "acme" },
        log: (msg: string, fields?: Record<string, unknown>) => lines.push({ msg, ...fields }),
      });
      const admitted = await (await t.invoke("wf.steps", { n: 1 })).json();
      runId = admitted.runId;
      await eventually(async () => (await (await t.fetch(`/runs/${runId}`)).json()).status === "succeeded", 20_000);
      mcp = await mcpClient(t, t.serviceKey);
      await dropTables(dialect, t.config.databaseUrl, ["workflow_steps", "workflow_runs", "executions"]);
    }, 60_000);
    afterAll(async () => {
      await mcp.close();
      await t.stop();
    }, 30_000);

    test("legacy tools/call: -32603 'internal error' at 200; the log has the stack, the reqId and the JSON-RPC id", async () => {
      const call = { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "wf.steps", arguments: { n: 2 } } };
      const res = await postLegacy(call, "bug-legacy-call");
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ jsonrpc: "2.0", id: 7, error: { code: -32603, message: "internal error" } });
      const line = await errorLine("bug-legacy-call");
      expect(line.msg).toStartWith("MCP tools/call failed: ");
      expect(line.msg).toContain("\n    at ");
      expect(line.rpcId).toBe(7);
    });

    test("legacy resources/read (the SDK's path): the same -32603, which the SDK's client shows with one prefix", async () => {
      const uri = `service://acme/runs/${runId}`;
      const res = await postLegacy({ jsonrpc: "2.0", id: 8, method: "resources/read", params: { uri } }, "bug-read");
      expect(await res.json()).toEqual({ jsonrpc: "2.0", id: 8, error: { code: -32603, message: "internal error" } });
      expect((await errorLine("bug-read")).msg).toStartWith("MCP resources/read failed: ");
      await expect(mcp.readResource({ uri })).rejects.toMatchObject({
        code: -32603,
        message: "MCP error -32603: internal error",
      });
      await expect(mcp.callTool({ name: "wf.steps", arguments: { n: 3 } })).rejects.toMatchObject({
        code: -32603,
        message: "MCP error -32603: internal error",
      });
    });

    test("2026-07-28: tools/call, resources/read and tasks/get answer -32603 in band (200), each logged", async () => {
      const requests = [
        modernRequest("tools/call", { name: "wf.steps", arguments: { n: 4 } }, "wf.steps"),
        modernRequest("resources/read", { uri: `service://acme/runs/${runId}` }, `service://acme/runs/${runId}`),
        modernRequest("tasks/get", { taskId: runId }, runId),
      ];
      for (const { headers, body } of requests) {
        const reqId = `bug-modern-${body.method.replace("/", "-")}`;
        const res = await postMcp(body, headers, reqId);
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({
          jsonrpc: "2.0",
          id: "modern-1",
          error: { code: -32603, message: "internal error" },
        });
        const line = await errorLine(reqId);
        expect(line.msg).toStartWith(`MCP ${body.method} failed: `);
        expect(line.rpcId).toBe("modern-1");
      }
    });

    test("/session: an error 500 internal_error for the message; the socket stays open; the log has the stack", async () => {
      const live = await LiveClient.connect(t.url);
      live.send({ op: "init", "access-token": t.serviceKey });
      const { "session-id": sessionId } = await live.op("init-ok");
      live.send({ op: "subscribe-stream", "execution-id": runId, "client-event-id": "follow" });
      const error = await live.next((m) => m.op === "error" && m["client-event-id"] === "follow");
      expect(error).toMatchObject({
        status: 500,
        error: "internal_error",
        message: "the server failed to answer this message",
      });
      live.send({ op: "remove-query", q: { marks: {} }, "client-event-id": "still-open" });
      expect(await live.op("remove-query-ok")).toMatchObject({ "client-event-id": "still-open" });
      const line = await logged((l) => l.msg.startsWith(`session ${sessionId}: subscribe-stream`));
      expect(line).toMatchObject({ level: "error" });
      expect(line.msg).toContain("\n    at ");
      live.close();
    });

    test("HTTP: 500 internal_error, and the log line names the request as its access line does", async () => {
      const res = await t.fetch("/actions/wf.steps/invoke", {
        method: "POST",
        headers: { "content-type": "application/json", "x-request-id": "bug-http" },
        body: JSON.stringify({ requestId: crypto.randomUUID(), input: { n: 5 } }),
      });
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({
        ok: false,
        error: "internal_error",
        message: "the server failed to answer this request",
      });
      expect((await errorLine("bug-http")).msg).toStartWith("unhandled error: ");
    });
  });
}

/** Makes the database refuse to record an execution's success, as a check of its own would (the message is the database's). */
const refuseSuccesses = (dialect: Dialect, url: string) =>
  executeStatements(
    url,
    dialect.name === "postgres"
      ? `create function refuse_success() returns trigger language plpgsql as $$
         begin if new.status = 'succeeded' then raise exception 'refused: %', new.output; end if; return new; end $$;
         create trigger refuse_success before update on executions for each row execute function refuse_success();`
      : `create trigger refuse_success before update on executions when new.status = 'succeeded'
           begin select raise(abort, 'refused'); end;`,
  );

for (const dialect of dialects) {
  describe(`an execution that fails for the server's own reason records a fixed one (${dialect.name})`, () => {
    let t: TestServer;
    const lines: Line[] = [];
    const errorLines = (executionId: string) =>
      lines.filter((l) => l.level === "error" && l.executionId === executionId);

    beforeAll(async () => {
      t = await startTestServer(dialect, {
        release: fixture("basic"),
        log: (msg: string, fields?: Record<string, unknown>) => lines.push({ msg, ...fields }),
      });
    }, 30_000);
    afterAll(() => t.stop(), 30_000);

    test("files the store cannot write: 'the files sent could not be stored'; the cause (the file's key) is logged", async () => {
      // A file where the executions' folder goes: every upload's folder fails to be made.
      const { storage } = t.config;
      if (storage.driver !== "disk") throw new Error("the test server stores files on disk");
      mkdirSync(storage.root, { recursive: true });
      writeFileSync(join(storage.root, "executions"), "in the way");
      const form = new FormData();
      form.set("request", JSON.stringify({ requestId: crypto.randomUUID(), input: { note: "x" } }));
      form.set("picture", new File(["png"], "p.png", { type: "image/png" }));
      const res = await t.fetch("/actions/test.attach/invoke", { method: "POST", body: form });
      expect(res.status).toBe(200);
      const { execution } = await res.json();
      expect(execution).toMatchObject({
        status: "failed",
        errorCode: "action_failed",
        errorMessage: "the files sent could not be stored",
      });
      const [line] = errorLines(execution.id);
      expect(line?.msg).toStartWith(`execution ${execution.id}: the files sent could not be stored: `);
      expect(line?.msg).toContain(`executions/${execution.id}/picture/p.png`);
    });

    test("a success the database refuses to record: 'the output could not be stored'; the cause is logged", async () => {
      const requestId = crypto.randomUUID();
      const gate = `refused-${requestId}`;
      const answer = t.invoke("test.count", { key: gate, gate }, { requestId });
      // Recorded as running first, so that its end is an update the database refuses.
      await eventually(
        async () =>
          (await selectRows(t.config.databaseUrl, `select id from executions where request_id = '${requestId}'`))
            .length,
        10_000,
      );
      await refuseSuccesses(dialect, t.config.databaseUrl);
      openGate(gate);
      const res = await answer;
      expect(res.status).toBe(200);
      const { execution } = await res.json();
      expect(execution).toMatchObject({
        status: "failed",
        errorCode: "action_failed",
        errorMessage: "the output could not be stored",
      });
      expect(errorLines(execution.id).map((l) => l.msg)).toContainEqual(
        expect.stringContaining(`could not record the end of execution ${execution.id} (attempt 3): `),
      );
    }, 20_000);
  });
}

for (const dialect of dialects) {
  test(`a live session's token check that fails is logged and tried again; the server keeps serving (${dialect.name})`, async () => {
    const database = await dialect.create();
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-revocation-"));
    const env = { DATABASE_URL: database.url, DATA_DIR: dataDir, SERVICE_KEYS: `key-${crypto.randomUUID()}` };
    let server: Awaited<ReturnType<typeof serve>> | undefined;
    try {
      const token = (await cli(["token", "create", "--user", "rita"], env)).stdout.trim().split("\n").at(-1) ?? "";
      server = await serve(["start", "--release", fixture("workflows")], env);
      const live = await LiveClient.connect(server.url);
      live.send({ op: "init", "access-token": token });
      await live.op("init-ok");
      const from = server.output().length;
      // The periodic check of the sessions' tokens reads this table: it now fails with no one to answer.
      await dropTables(dialect, database.url, ["api_tokens"]);
      const seen = await server.waitFor(/checking live sessions' tokens failed|\[exited \d+\]/, 15_000, from);
      expect(seen).toBe("checking live sessions' tokens failed");
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      live.close();
    } finally {
      await server?.kill();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
}

const postgresDialect = dialects.find((dialect) => dialect.name === "postgres");

describe.skipIf(!postgresDialect)(
  "a database that cannot be reached is told as such (postgres, behind a relay cut)",
  () => {
    let t: TestServer;
    let relay: ReturnType<typeof tcpProxy>;
    let reachable = true;
    let runId: string;
    const UNAVAILABLE = "the database cannot be reached; try again shortly";

    beforeAll(async () => {
      const postgresPort = Number(new URL(process.env.TEST_DATABASE_URL as string).port || 5432);
      const nothing = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
      const nothingPort = nothing.port;
      nothing.stop(true);
      // The server reaches its database through the relay; while it is cut, every connection it makes closes.
      relay = tcpProxy(() => (reachable ? postgresPort : nothingPort));
      const relayed: Dialect = {
        name: "postgres",
        async create() {
          const database = await (postgresDialect as Dialect).create();
          const url = new URL(database.url);
          url.host = new URL(relay.url).host;
          return { url: url.toString(), drop: database.drop };
        },
      };
      t = await startTestServer(relayed, { release: fixture("workflows"), env: { HANDLE: "acme" } });
      runId = (await (await t.invoke("wf.steps", { n: 1 })).json()).runId;
      // Ended before the cut: a run still going would hold the server's stop up until the database is back.
      await eventually(async () => (await (await t.fetch(`/runs/${runId}`)).json()).status === "succeeded");
      reachable = false;
      relay.cutAll();
    });
    afterAll(async () => {
      reachable = true;
      await t.stop();
      relay.stop();
    }, 30_000);

    test("a tool call stays the tool refusal database_unavailable; resources/read is -32603 with that message, in both eras", async () => {
      const legacy = { "content-type": "application/json", accept: ACCEPT, "mcp-protocol-version": "2025-11-25" };
      const post = (body: unknown, headers: Record<string, string>) =>
        t.fetch("/mcp", { method: "POST", headers, body: JSON.stringify(body) });
      const call = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "wf.steps", arguments: { n: 2 } } };
      const { result } = await (await post(call, legacy)).json();
      expect(result.isError).toBe(true);
      expect(JSON.parse(result.content[0].text)).toMatchObject({ error: "database_unavailable", message: UNAVAILABLE });

      const uri = `service://acme/runs/${runId}`;
      const unavailable = { code: -32603, message: UNAVAILABLE, data: { error: "database_unavailable" } };
      const read = await post({ jsonrpc: "2.0", id: 2, method: "resources/read", params: { uri } }, legacy);
      expect(await read.json()).toEqual({ jsonrpc: "2.0", id: 2, error: unavailable });
      const modern = modernRequest("resources/read", { uri }, uri);
      const modernRead = await post(modern.body, modern.headers);
      expect(modernRead.status).toBe(200);
      expect(await modernRead.json()).toEqual({ jsonrpc: "2.0", id: "modern-1", error: unavailable });
    });
  },
);
