import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { startServer } from "../src/main.ts";
import { openStore } from "../src/store/open.ts";
import { openGate, runsOf } from "./fixtures/releases/basic/lib/probe.ts";
import { serve } from "./support/cli.ts";
import { dialects } from "./support/databases.ts";
import { fixture, startTestServer, type TestResponse } from "./support/server.ts";

/**
 * The PostgreSQL claim path (store/pg/executions.ts): a claim is decided by its INSERT in a transaction
 * that commits after the handlers it started have had their turn, with their settlements. What must
 * still hold: one execution per request id across instances, nothing answered before it is durable.
 */
const pg = dialects.find((d) => d.name === "postgres");

// biome-ignore lint/suspicious/noExplicitAny: tests read answers' JSON freely
type Json = any;

describe.skipIf(!pg)("PostgreSQL claim path", () => {
  test("two servers on one database get one requestId at once: one execution, the handler ran once, equal answers", async () => {
    const a = await startTestServer(pg as NonNullable<typeof pg>, { release: fixture("basic") });
    // A second instance: its own store (pool, instance id, claim transactions) and HTTP server, same database.
    const storeB = await openStore(a.config.databaseUrl);
    const b = await startServer(a.config, { store: storeB, log: () => {} });
    try {
      const requestIds: string[] = Array.from({ length: 12 }, () => crypto.randomUUID());
      const send = (base: string, requestId: string) =>
        fetch(`${base}/actions/test.count/invoke`, {
          method: "POST",
          headers: { authorization: `Bearer ${a.serviceKey}`, "content-type": "application/json" },
          body: JSON.stringify({ requestId, input: { key: requestId } }),
        });
      const answers = await Promise.all(
        requestIds.flatMap((requestId) =>
          Array.from({ length: 8 }, async (_, i) => {
            const response = await send(i % 2 ? b.url : a.url, requestId);
            return { requestId, status: response.status, body: (await response.json()) as Json };
          }),
        ),
      );
      for (const requestId of requestIds) {
        const mine = answers.filter((x) => x.requestId === requestId);
        expect(mine.map((x) => x.status)).toEqual(Array(8).fill(200));
        const executions = mine.map((x) => x.body.execution);
        expect(new Set(executions.map((x) => x.id)).size).toBe(1);
        for (const execution of executions) {
          expect(execution).toEqual({ ...executions[0], status: "succeeded", output: { runs: 1 } });
        }
        expect(runsOf(requestId)).toBe(1);
      }
      const stored = await a.store.executions.list({ limit: 100, maxValueBytes: 1024 });
      expect(stored.filter((row) => requestIds.includes(row.requestId))).toHaveLength(requestIds.length);
    } finally {
      await b.stop();
      await storeB.close();
      await a.stop();
    }
  }, 60_000);

  test("an execution answered 202 (still running when the wait ends) is committed before the answer", async () => {
    const t = await startTestServer(pg as NonNullable<typeof pg>, { release: fixture("basic"), env: { WAIT_MS: "1" } });
    const sql = postgres(t.config.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      await sql`select 1`;
      for (let i = 0; i < 20; i++) {
        const key = crypto.randomUUID();
        const response = await t.invoke("test.count", { key, gate: key });
        expect(response.status).toBe(202);
        const { execution } = await response.json();
        // Read at once over a connection of its own: the row must be there already.
        const rows = await sql`select status from executions where id = ${execution.id}`;
        expect([...rows]).toEqual([{ status: "running" }]);
        openGate(key);
      }
    } finally {
      await sql.end();
      await t.stop();
    }
  }, 60_000);

  test("every invoke answered 200 survives a SIGKILL right after the answer; a replay after the restart finds it", async () => {
    const database = await (pg as NonNullable<typeof pg>).create();
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-kill-"));
    const env = { DATA_DIR: dataDir, DATABASE_URL: database.url, SERVICE_KEYS: "kill-key" };
    const headers = { authorization: "Bearer kill-key", "content-type": "application/json" };
    const invoke = (base: string, requestId: string): Promise<TestResponse> =>
      fetch(`${base}/actions/test.echo/invoke`, {
        method: "POST",
        headers,
        body: JSON.stringify({ requestId, input: { text: requestId } }),
      });
    let server = await serve(["start", "--release", fixture("basic")], env);
    try {
      const requestIds = Array.from({ length: 64 }, () => crypto.randomUUID());
      const answered: { requestId: string; body: Json }[] = [];
      const sent = requestIds.map(async (requestId) => {
        const response = await invoke(server.url, requestId).catch(() => null);
        // The first answer kills the server: whatever else was in flight may or may not have been answered.
        if (response?.status === 200) server.proc.kill("SIGKILL");
        const body = await response?.json().catch(() => null);
        if (response?.status === 200 && body) answered.push({ requestId, body });
      });
      await Promise.all(sent);
      await server.proc.exited;
      expect(server.proc.signalCode).toBe("SIGKILL");
      expect(answered.length).toBeGreaterThan(0);

      server = await serve(["start", "--release", fixture("basic")], env);
      for (const { requestId, body } of answered) {
        expect(body.execution.status).toBe("succeeded");
        const stored = await fetch(`${server.url}/executions/${body.execution.id}`, { headers });
        expect(stored.status).toBe(200);
        expect(await stored.json()).toMatchObject(body.execution);
        const replay = await invoke(server.url, requestId);
        expect(replay.status).toBe(200);
        expect((await replay.json()).execution).toEqual(body.execution);
      }
    } finally {
      await server.kill();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
