import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { LogFollows } from "../../src/store/pg/log-follows.ts";
import { cli, type ServerProcess, serve } from "../support/cli.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";
import { LiveClient } from "../support/live-client.ts";
import { eventually, fixture } from "../support/server.ts";

/**
 * Two server processes (`start`) on one PostgreSQL database: a follower on B of an execution running on
 * A receives each log line as A stores it. B reads an execution again only after a minute when nothing
 * tells it of a change (FOLLOW_POLL_MS), so only the notification can bring the lines in time. The test
 * listens on the channels too: an execution nobody follows sends no word of its lines.
 */
const pg = dialects.find((d) => d.name === "postgres");

const KEY = `logs-key-${crypto.randomUUID()}`;
const LINES = 5;
const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };

/** What the servers' channels carried, in the order the database delivered it. */
const heard: { channel: string; payload: string }[] = [];

describe.skipIf(!pg)("log lines across instances (postgres)", () => {
  let database: TestDatabase;
  let a: ServerProcess;
  let b: ServerProcess;
  let listener: postgres.Sql;
  const dirs: string[] = [];
  const tempDir = (prefix: string) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };

  beforeAll(async () => {
    database = await (pg as (typeof dialects)[number]).create();
    listener = postgres(database.url, { max: 1, onnotice: () => {} });
    const shared = { DATABASE_URL: database.url, SERVICE_KEYS: KEY, HOST: "127.0.0.1", WAIT_MS: "100" };
    const published = await cli(["release", "publish", fixture("logs")], { ...shared, DATA_DIR: tempDir("actuate-") });
    expect(published.code).toBe(0);
    [a, b] = await Promise.all([
      serve(["start"], { ...shared, DATA_DIR: tempDir("actuate-a-") }, undefined, 45_000),
      serve(["start"], { ...shared, DATA_DIR: tempDir("actuate-b-"), FOLLOW_POLL_MS: "60000" }, undefined, 45_000),
    ]);
    // After the servers migrated the database; one connection, so the channels' order is the commits'.
    for (const channel of ["actuate_execution_changes", "actuate_execution_logs"]) {
      await listener.listen(channel, (payload) => heard.push({ channel, payload }));
    }
  }, 90_000);

  /** Invokes logs.gated on A: its lines wait for files in `gates`. */
  async function invokeGated(gates: string, lines: number): Promise<string> {
    const response = await fetch(`${a.url}/actions/logs.gated/invoke`, {
      method: "POST",
      headers,
      body: JSON.stringify({ requestId: crypto.randomUUID(), input: { gates, lines } }),
    });
    expect([200, 202]).toContain(response.status);
    return ((await response.json()) as { execution: { id: string } }).execution.id;
  }

  const heardOf = (channel: string, id: string) =>
    heard.filter((h) => h.channel === channel && h.payload.split(",").some((entry) => entry.split(":")[0] === id));

  afterAll(async () => {
    await listener?.end();
    await Promise.all([a, b].map((server) => (server && server.proc.exitCode === null ? server.kill() : undefined)));
    await database?.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  test("a follower on B receives each line of an execution on A as it is stored, in order, before its end", async () => {
    const gates = tempDir("actuate-gates-");
    const id = await invokeGated(gates, LINES);
    expect(heardOf("actuate_execution_changes", id)).toEqual([]);
    const client = await LiveClient.connect(b.url);
    try {
      client.send({ op: "init", "access-token": KEY });
      await client.op("init-ok");
      client.send({ op: "subscribe-stream", "execution-id": id });
      expect(await client.op("stream-append")).toMatchObject({ "execution-id": id, status: "running", done: false });
      for (let i = 0; i < LINES; i++) {
        // Line i is logged only once its gate opens, and the next gate opens only once B streamed it: each
        // line came by word of A's commit, long before B's next read (a minute away).
        writeFileSync(join(gates, String(i)), "");
        const streamed = await client.op("stream-append", 30_000);
        expect(streamed).toMatchObject({ "execution-id": id, log: `line ${i}`, seq: i });
      }
      // Every line arrived while the execution still waited for its end gate: nothing else was sent.
      expect(client.pending()).toEqual([]);
      writeFileSync(join(gates, "end"), "");
      expect(await client.op("stream-append", 30_000)).toMatchObject({ status: "succeeded", done: true });
      expect(client.pending()).toEqual([]);
      expect(heardOf("actuate_execution_logs", id).length).toBeGreaterThanOrEqual(LINES);
    } finally {
      client.close();
    }
  }, 120_000);

  test("an execution nobody follows sends no word of its lines: only of its end", async () => {
    const gates = tempDir("actuate-gates-");
    for (const gate of ["0", "1", "2", "end"]) writeFileSync(join(gates, gate), "");
    const id = await invokeGated(gates, 3);
    // Its lines commit before its end, so word of them would have come before the end's.
    await eventually(() => heardOf("actuate_execution_changes", id).length > 0, 30_000);
    expect(heardOf("actuate_execution_logs", id)).toEqual([]);
    const logs = await fetch(`${a.url}/executions/${id}/logs`, { headers });
    const body = (await logs.json()) as { items: { line: string }[] };
    expect(body.items.map((item) => item.line)).toEqual(["line 0", "line 1", "line 2"]);
  }, 60_000);

  test("lines handed over before an announcement was heard are told of once it is, and after their commit", async () => {
    // A writer's side alone, on the test's own connection: the announcement and a batch crossing.
    const client = postgres(database.url, { max: 2, onnotice: () => {} });
    const follows = new LogFollows(client);
    const [early, inFlight] = [crypto.randomUUID(), crypto.randomUUID()];
    try {
      follows.appended(early, 3);
      follows.appended(inFlight, 7);
      follows.heard(`+${early}`);
      await eventually(() => heardOf("actuate_execution_logs", early).length > 0);
      expect(heardOf("actuate_execution_logs", early).map((h) => h.payload)).toEqual([`${early}:3`]);
      // The batch left unannounced: word of it after its commit, once a follower is known.
      follows.stored([new Map([[inFlight, 7]])]);
      follows.heard(`+${inFlight}`);
      follows.stored([new Map([[inFlight, 9]])]);
      await eventually(() => heardOf("actuate_execution_logs", inFlight).length >= 2);
      expect(heardOf("actuate_execution_logs", inFlight).map((h) => h.payload)).toEqual([
        `${inFlight}:7`,
        `${inFlight}:9`,
      ]);
      follows.heard(`-${inFlight}`);
      expect(follows.followed(inFlight)).toBe(false);
    } finally {
      await client.end();
    }
  }, 30_000);
});
