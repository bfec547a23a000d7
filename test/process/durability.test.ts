import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openGate } from "../fixtures/releases/basic/lib/probe.ts";
import { cli, type ServerProcess, serve } from "../support/cli.ts";
import { dialects, selectRows } from "../support/databases.ts";
import { fixture, startTestServer } from "../support/server.ts";

// Issue #14: an invoke is durable before it is answered. A server is SIGKILLed while invokes are still
// arriving, right after some were answered; the next server on the same database has every answered
// execution as it was answered, and a replay of each request names it (on SQLite, most of those keys
// were only in memory and in the executions table when the process died).

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const REQUESTS = 300;
const KILL_AFTER = 100;

for (const dialect of dialects) {
  test(`invokes answered 200 survive a SIGKILL right after the answer; replays after the restart find them (${dialect.name})`, async () => {
    const database = await dialect.create();
    const dir = mkdtempSync(join(tmpdir(), "actuate-durable-"));
    const key = `test-key-${crypto.randomUUID()}`;
    const servers: ServerProcess[] = [];
    cleanups.push(async () => {
      for (const s of servers) if (s.proc.exitCode === null) s.proc.kill("SIGKILL");
      await Promise.all(servers.map((s) => s.proc.exited));
      await database.drop();
      rmSync(dir, { recursive: true, force: true });
    });
    const start = async () => {
      const server = await serve(["start", "--release", "releases/v1"], {
        DATABASE_URL: database.url,
        SERVICE_KEYS: key,
        DATA_DIR: join(dir, "data"),
      });
      servers.push(server);
      return server;
    };
    const invoke = (server: ServerProcess, requestId: string, a: number) =>
      fetch(`${server.url}/actions/math.add/invoke`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ requestId, input: { a, b: 1 } }),
      });

    const first = await start();
    const answered: { requestId: string; id: string; sum: number }[] = [];
    let killed = false;
    const sent = Array.from({ length: REQUESTS }, async (_, a) => {
      const requestId = crypto.randomUUID();
      try {
        const res = await invoke(first, requestId, a);
        const body = (await res.json()) as { execution: { id: string; status: string; output: { sum: number } } };
        if (killed) return; // answered as the kill landed: not counted (it may or may not have been kept)
        expect(res.status).toBe(200);
        expect(body.execution.status).toBe("succeeded");
        answered.push({ requestId, id: body.execution.id, sum: body.execution.output.sum });
        if (answered.length === KILL_AFTER) {
          killed = true;
          first.proc.kill("SIGKILL");
        }
      } catch {
        // a request the kill cut off
      }
    });
    await Promise.all(sent);
    await first.proc.exited;
    expect(first.proc.signalCode).toBe("SIGKILL");
    expect(answered.length).toBeGreaterThanOrEqual(KILL_AFTER);

    const second = await start();
    for (const { requestId, id, sum } of answered) {
      const read = await fetch(`${second.url}/executions/${id}`, { headers: { authorization: `Bearer ${key}` } });
      expect(read.status).toBe(200);
      expect(await read.json()).toMatchObject({ id, requestId, status: "succeeded", output: { sum } });
      const replay = await invoke(second, requestId, sum - 1);
      expect(replay.status).toBe(200);
      expect(((await replay.json()) as { execution: { id: string } }).execution.id).toBe(id);
    }
  }, 120_000);
}

for (const dialect of dialects) {
  test(`an execution answered 202 (still running when the wait ends) is committed before the answer (${dialect.name})`, async () => {
    const t = await startTestServer(dialect, { release: fixture("basic"), env: { WAIT_MS: "1" } });
    cleanups.push(() => t.stop());
    for (let i = 0; i < 20; i++) {
      const key = crypto.randomUUID();
      const response = await t.invoke("test.count", { key, gate: key });
      expect(response.status).toBe(202);
      const { execution } = await response.json();
      // Read at once over a connection of its own: the row must be there already.
      const rows = await selectRows(t.config.databaseUrl, `select status from executions where id = '${execution.id}'`);
      expect(rows).toEqual([{ status: "running" }]);
      openGate(key);
    }
  }, 60_000);
}

test("a SQLite URL with ?synchronous=full serves and keeps what it answered; another value stops the start", async () => {
  const [sqlite] = dialects;
  if (!sqlite) throw new Error("no dialect");
  const dir = mkdtempSync(join(tmpdir(), "actuate-sync-"));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const t = await startTestServer(sqlite, {
    release: "releases/v1",
    env: { DATABASE_URL: `sqlite:${join(dir, "full.db")}?synchronous=full` },
  });
  cleanups.push(() => t.stop());
  const requestId = crypto.randomUUID();
  const first = await (await t.invoke("math.add", { a: 2, b: 3 }, { requestId })).json();
  expect(first.execution).toMatchObject({ status: "succeeded", output: { sum: 5 } });
  await t.restart();
  const again = await (await t.invoke("math.add", { a: 2, b: 3 }, { requestId })).json();
  expect(again.execution.id).toBe(first.execution.id);

  const refused = await cli(["start"], {
    DATA_DIR: join(dir, "data"),
    PORT: "0",
    DATABASE_URL: `sqlite:${join(dir, "off.db")}?synchronous=off`,
  });
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("?synchronous=normal or ?synchronous=full");
  expect(refused.stdout).not.toContain("actuate serving");
}, 60_000);
