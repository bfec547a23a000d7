import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cli, type ServerProcess, serve } from "../support/cli.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";
import { LiveClient } from "../support/live-client.ts";
import { fixture } from "../support/server.ts";

/**
 * Two server processes (`start`) on one PostgreSQL database: a follower on B of an execution running on
 * A receives each log line as A stores it. B reads an execution again only after a minute when nothing
 * tells it of a change (FOLLOW_POLL_MS), so only the notification can bring the lines in time.
 */
const pg = dialects.find((d) => d.name === "postgres");

const KEY = `logs-key-${crypto.randomUUID()}`;
const LINES = 5;

describe.skipIf(!pg)("log lines across instances (postgres)", () => {
  let database: TestDatabase;
  let a: ServerProcess;
  let b: ServerProcess;
  const dirs: string[] = [];
  const tempDir = (prefix: string) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };

  beforeAll(async () => {
    database = await (pg as (typeof dialects)[number]).create();
    const shared = { DATABASE_URL: database.url, SERVICE_KEYS: KEY, HOST: "127.0.0.1", WAIT_MS: "100" };
    const published = await cli(["release", "publish", fixture("logs")], { ...shared, DATA_DIR: tempDir("actuate-") });
    expect(published.code).toBe(0);
    [a, b] = await Promise.all([
      serve(["start"], { ...shared, DATA_DIR: tempDir("actuate-a-") }, undefined, 45_000),
      serve(["start"], { ...shared, DATA_DIR: tempDir("actuate-b-"), FOLLOW_POLL_MS: "60000" }, undefined, 45_000),
    ]);
  }, 90_000);

  afterAll(async () => {
    await Promise.all([a, b].map((server) => (server && server.proc.exitCode === null ? server.kill() : undefined)));
    await database?.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  test("a follower on B receives each line of an execution on A as it is stored, in order, before its end", async () => {
    const gates = tempDir("actuate-gates-");
    const response = await fetch(`${a.url}/actions/logs.gated/invoke`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ requestId: crypto.randomUUID(), input: { gates, lines: LINES } }),
    });
    expect(response.status).toBe(202);
    const { id } = ((await response.json()) as { execution: { id: string } }).execution;
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
    } finally {
      client.close();
    }
  }, 120_000);
});
