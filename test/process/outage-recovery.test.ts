import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { addUser } from "../../src/auth/users.ts";
import { newRun } from "../../src/engine/workflows/new-run.ts";
import { type Dialect, dialects, executeStatements } from "../support/databases.ts";
import { signedInClient } from "../support/oauth-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";

const postgresDialect = dialects.find((dialect) => dialect.name === "postgres");

/**
 * PostgreSQL behind a relay the test cuts: while it is cut every connection the server makes closes at
 * once, as when the database goes away. The server's own log lines are kept.
 */
async function serverBehindRelay(env: Record<string, string> = {}) {
  const postgresPort = Number(new URL(process.env.TEST_DATABASE_URL as string).port || 5432);
  const nothing = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const nothingPort = nothing.port;
  nothing.stop(true);
  let reachable = true;
  const relay = tcpProxy(() => (reachable ? postgresPort : nothingPort));
  let drop: () => Promise<void> = async () => {};
  const relayed: Dialect = {
    name: "postgres",
    async create() {
      const database = await (postgresDialect as Dialect).create();
      drop = database.drop;
      const url = new URL(database.url);
      url.host = new URL(relay.url).host;
      return { url: url.toString(), drop: async () => {} };
    },
  };
  const lines: string[] = [];
  const t = await startTestServer(relayed, { release: fixture("workflows"), env, log: (msg) => lines.push(msg) });
  return {
    t,
    lines,
    cut() {
      reachable = false;
      relay.cutAll();
    },
    mend() {
      reachable = true;
    },
    /** Stops the server unless a test did, and drops the database. */
    async close(stopped = false) {
      reachable = true;
      if (stopped) await t.store.close();
      else await t.stop();
      relay.stop();
      await drop();
    },
  };
}

describe.skipIf(!postgresDialect)("while PostgreSQL cannot be reached (behind a relay cut)", () => {
  let work: string;
  let closing: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await closing?.();
    closing = null;
    rmSync(work, { recursive: true, force: true });
  }, 30_000);

  test("the server's stop ends, with a workflow run in flight: its pass is halted and its lease left to run out", async () => {
    work = mkdtempSync(join(tmpdir(), "actuate-stop-"));
    const effects = join(work, "effects.jsonl");
    const server = await serverBehindRelay();
    closing = server.close;
    const { t } = server;
    const started = await t.invoke("wf.gated", { gate: join(work, "never"), log: effects });
    expect(started.status).toBe(202);
    // The run's step is running (it waits for a gate that never opens) when the database goes.
    await eventually(() => existsSync(effects) && readFileSync(effects, "utf8").includes('"phase":"start"'), 10_000);
    server.cut();
    closing = () => server.close(true);
    await t.server.stop();
    expect(readFileSync(effects, "utf8")).toContain('"phase":"aborted"');
  }, 60_000);

  test("a JWT of the built-in authority first seen while the database is away is accepted once it is back", async () => {
    work = mkdtempSync(join(tmpdir(), "actuate-jwt-"));
    const server = await serverBehindRelay();
    closing = server.close;
    const { t } = server;
    await addUser(t.store, "alice", PASSWORD);
    const jwt = (await signedInClient(t.url, "alice", PASSWORD)).saved?.access_token as string;
    server.cut();
    // The authority's keys cannot be read to verify it.
    expect((await t.fetch("/executions", { token: jwt })).status).toBe(503);
    server.mend();
    await eventually(async () => (await t.fetch("/executions", { token: jwt })).status === 200, 15_000);
  }, 60_000);
});

const PASSWORD = "correct horse battery staple";

/** A queued run of wf.steps on release w1, stored as an invocation on another instance would have left it. */
async function queuedRunOnW1(t: TestServer): Promise<string> {
  const { execution, run } = newRun({
    principal: { kind: "service", id: "service-test" },
    requestId: crypto.randomUUID(),
    input: { n: 1 },
    contract: { name: "wf.steps", contractHash: "h".repeat(64) },
    releaseVersion: "w1",
    fingerprint: "f".repeat(64),
    lease: null,
    now: Date.now(),
  });
  await t.store.runs.admit(execution, run);
  return run.id;
}

/**
 * A server that serves release w2 and has never loaded w1 (it started after w2 was activated), so a run
 * of w1 reads w1 from the store.
 */
async function serverWithoutW1(dialect: Dialect) {
  const lines: string[] = [];
  const t = await startTestServer(dialect, {
    release: fixture("workflows"),
    env: { WORKFLOW_LEASE_MS: "1000", WORKFLOW_POLL_MS: "50" },
    log: (msg) => lines.push(msg),
  });
  await t.publish(fixture("workflows-next"));
  await t.restart();
  expect(t.server.releases.current()?.version).toBe("w2");
  return { t, lines };
}

const MARKER = "secret-marker-of-the-driver";

/** Makes every read of stored releases fail with this SQLSTATE and a message holding MARKER (PostgreSQL). */
const refuseReleaseReads = (code: string) => `
  alter table releases rename to releases_kept;
  create function releases_refused() returns setof releases_kept language plpgsql as
    $$ begin raise exception '${MARKER}' using errcode = '${code}'; end $$;
  create view releases as select * from releases_refused();`;

const runOf = async (t: TestServer, id: string) => (await t.fetch(`/runs/${id}`)).json();

describe.skipIf(!postgresDialect)("a run whose release the database cannot be read for (postgres)", () => {
  let t: TestServer | null = null;
  afterEach(async () => {
    await t?.stop();
    t = null;
  }, 30_000);

  test("the database away (57P03): the run is let go and resumed once its release can be read, nothing of the driver recorded", async () => {
    const server = await serverWithoutW1(postgresDialect as Dialect);
    t = server.t;
    await executeStatements(t.config.databaseUrl, refuseReleaseReads("57P03"));
    const runId = await queuedRunOnW1(t);
    const refused = "workflow worker: the database cannot be reached; trying again until it is back";
    await eventually(
      async () => server.lines.includes(refused) || (await runOf(t as TestServer, runId)).status === "failed",
      10_000,
    );
    expect((await runOf(t, runId)).status).not.toBe("failed");
    await executeStatements(
      t.config.databaseUrl,
      "drop view releases; drop function releases_refused(); alter table releases_kept rename to releases;",
    );
    await eventually(async () => (await runOf(t as TestServer, runId)).status === "succeeded", 15_000);
    expect(await runOf(t, runId)).toMatchObject({ releaseVersion: "w1", errorMessage: null, output: { total: 21 } });
    expect(server.lines.join("\n")).not.toContain(MARKER);
  }, 60_000);
});

for (const dialect of dialects) {
  test(`a run whose release cannot be read for a reason of the database's own fails with a reason of ours; the cause is logged without the statement's parameters (${dialect.name})`, async () => {
    const server = await serverWithoutW1(dialect);
    const { t } = server;
    try {
      await executeStatements(
        t.config.databaseUrl,
        dialect.name === "postgres" ? refuseReleaseReads("P0001") : "alter table releases rename to releases_kept",
      );
      const runId = await queuedRunOnW1(t);
      await eventually(async () => (await runOf(t, runId)).status === "failed", 10_000);
      expect(await runOf(t, runId)).toMatchObject({
        errorCode: "action_failed",
        errorMessage: "the run's release w1 cannot be loaded",
      });
      const cause = server.lines.find((line) => line.startsWith(`workflow run ${runId}: the run's release w1`));
      expect(cause).toContain(dialect.name === "postgres" ? MARKER : "no such table: releases");
      expect(server.lines.join("\n")).not.toContain("params:");
    } finally {
      await t.stop();
    }
  }, 60_000);
}
