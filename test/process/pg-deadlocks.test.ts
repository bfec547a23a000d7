import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import parsePrometheus from "parse-prometheus-text-format";
import postgres from "postgres";
import { loadConfig } from "../../src/config.ts";
import { newRun } from "../../src/engine/workflows/new-run.ts";
import { bundlesDir, type RunningServer, startServer } from "../../src/main.ts";
import type { Log } from "../../src/observe/log.ts";
import { publishRelease } from "../../src/release/publish.ts";
import { openStore } from "../../src/store/open.ts";
import type { ExecutionRow, LogRow } from "../../src/store/rows.ts";
import type { Store } from "../../src/store/store.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";
import { row } from "../support/rows.ts";
import { eventually, fixture } from "../support/server.ts";

/**
 * Every batched write on PostgreSQL takes its row locks in one order (docs/decisions/postgres.md:
 * "one lock order"), so no load makes two of them wait on each other. PostgreSQL counts the deadlocks
 * it broke per database, and each test here has a database of its own.
 */
const pg = dialects.find((d) => d.name === "postgres");

const KEY = `deadlocks-key-${crypto.randomUUID()}`;
const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };

// biome-ignore lint/suspicious/noExplicitAny: tests read answers' JSON freely
type Json = any;

interface Instance {
  url: string;
  server: RunningServer;
  store: Store;
}

/**
 * `count` server instances (each its own store: pool, lanes, instance id) on one fresh database;
 * `databaseSettings` (`alter database … set …`) apply to every connection the instances open.
 */
async function startInstances(
  count: number,
  {
    env = {},
    log = () => {},
    databaseSettings = {},
  }: { env?: Record<string, string>; log?: Log; databaseSettings?: Record<string, string> } = {},
) {
  const database: TestDatabase = await (pg as NonNullable<typeof pg>).create();
  const admin = postgres(database.url, { max: 1, onnotice: () => {} });
  for (const [name, value] of Object.entries(databaseSettings)) {
    await admin.unsafe(`alter database ${new URL(database.url).pathname.slice(1)} set ${name} = '${value}'`);
  }
  await admin.end();
  const dataDir = mkdtempSync(join(tmpdir(), "actuate-deadlocks-"));
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    DATABASE_URL: database.url,
    SERVICE_KEYS: KEY,
    ...env,
  });
  const instances: Instance[] = [];
  for (let i = 0; i < count; i++) {
    const store = await openStore(database.url);
    if (i === 0) {
      await publishRelease({ store, bundlesDir: bundlesDir(config), dir: fixture("pg-load"), whenTaken: "refuse" });
    }
    const server = await startServer(config, { store, log });
    instances.push({ url: server.url, server, store });
  }
  return {
    instances,
    databaseUrl: database.url,
    /** Stops every instance, then answers the deadlocks PostgreSQL detected in the database, and drops it. */
    async stop(): Promise<number> {
      for (const { server, store } of instances) {
        await server.stop();
        await store.close();
      }
      try {
        return await deadlocks(database.url);
      } finally {
        await database.drop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * A backend adds the deadlocks it detected to the database's count when it is idle, or when it exits:
 * read once every other backend of the database has gone (the instances' stores are closed).
 */
async function deadlocks(url: string): Promise<number> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await eventually(async () => {
      const [row] = await sql`select count(*)::int as others from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()`;
      return row?.others === 0;
    }, 30_000);
    const [row] =
      await sql`select deadlocks::int as deadlocks from pg_stat_database where datname = current_database()`;
    return row?.deadlocks as number;
  } finally {
    await sql.end();
  }
}

const invoke = (base: string, n: number, requestId: string = crypto.randomUUID()) =>
  fetch(`${base}/actions/load.three-steps/invoke`, {
    method: "POST",
    headers,
    body: JSON.stringify({ requestId, input: { n } }),
  });

/** Invokes and waits for the run's end, as bench/workflows.ts does; answers the ended execution. */
async function runToEnd(base: string, n: number): Promise<Json> {
  const admitted = await invoke(base, n);
  expect(admitted.status).toBe(202);
  const { execution } = (await admitted.json()) as Json;
  const ended = await fetch(`${base}/executions/${execution.id}/result`, { headers });
  expect(ended.status).toBe(200);
  return ended.json();
}

const shuffled = <T>(items: T[]): T[] => {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
};

describe.skipIf(!pg)("PostgreSQL: no deadlocks", () => {
  test("one instance, 32 clients running 3-step workflows back to back: PostgreSQL detects no deadlock", async () => {
    // Every client's run held by the instance, and the heartbeat (one statement renewing all their
    // leases) every 300 ms rather than 2 s: the bench's load (bench/workflows.ts), with more of the
    // statement that locks many runs at once.
    const { instances, stop } = await startInstances(1, {
      env: { WORKFLOW_CONCURRENCY: "32", WORKFLOW_LEASE_MS: "900" },
    });
    const [{ url }] = instances as [Instance];
    let found: number;
    try {
      const until = Date.now() + 10_000;
      const client = async (c: number) => {
        for (let i = 0; Date.now() < until; i++) {
          const n = c * 1_000_000 + i;
          const ended = await runToEnd(url, n);
          expect(ended).toMatchObject({ status: "succeeded", output: { total: n + 3 } });
        }
      };
      await Promise.all(Array.from({ length: 32 }, (_, c) => client(c)));
    } finally {
      found = await stop();
    }
    expect(found).toBe(0);
  }, 180_000);

  test("three instances, each request id sent to every instance at once: one run per id, no deadlock", async () => {
    const { instances, stop } = await startInstances(3);
    let found: number;
    try {
      for (let round = 0; round < 8; round++) {
        const ids = Array.from({ length: 32 }, () => crypto.randomUUID());
        // Every instance gets all of them at once, each in its own order (as clients retrying through a balancer do).
        const answers = await Promise.all(
          instances.map(({ url }) =>
            Promise.all(
              shuffled(ids.map((id, i) => [id, i] as const)).map(async ([id, i]) => {
                const response = await invoke(url, i, id);
                return { id, status: response.status, body: (await response.json()) as Json };
              }),
            ),
          ),
        );
        for (const id of ids) {
          const mine = answers.flat().filter((answer) => answer.id === id);
          expect(mine.map((answer) => answer.status)).toEqual([202, 202, 202]);
          expect(new Set(mine.map((answer) => answer.body.runId)).size).toBe(1);
        }
      }
    } finally {
      found = await stop();
    }
    expect(found).toBe(0);
  }, 180_000);
});

describe.skipIf(!pg)("PostgreSQL: a batch broken off from outside", () => {
  interface Outside {
    store: Store;
    /** A connection of the test's own, in a transaction (say, an operator's) that never runs the deadlock check. */
    outside: postgres.ReservedSql;
    sql: postgres.Sql;
    /** Resolves once one batch waits for a lock and every other write of the instance has committed. */
    batchWaits(): Promise<unknown>;
  }

  /**
   * Runs `scenario`, then answers the instance's batch retries (/metrics) and its warnings. The instance's
   * connections detect a deadlock 2 s after they start waiting (1 s by default): time for the outside
   * transaction to join the circle, so that the batch, which waited first, is the one PostgreSQL breaks off.
   */
  async function brokenOff(scenario: (parts: Outside) => Promise<void>) {
    const warnings: string[] = [];
    const { instances, databaseUrl, stop } = await startInstances(1, {
      log: (message, fields) => {
        if (fields?.level === "warn") warnings.push(message);
      },
      databaseSettings: { deadlock_timeout: "2s" },
    });
    const [{ url, store }] = instances as [Instance];
    const sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
    const outside = await sql.reserve();
    try {
      const [{ pid }] = (await outside`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
      await outside.unsafe("begin");
      await outside.unsafe("set local deadlock_timeout = '1min'");
      const batchWaits = () =>
        eventually(async () => {
          const [row] = await sql`select count(*) filter (where wait_event_type = 'Lock')::int as waiting,
              count(*) filter (where state <> 'idle')::int as busy
            from pg_stat_activity where datname = current_database() and pid not in (pg_backend_pid(), ${pid})`;
          return row?.waiting === 1 && row.busy === 1;
        });
      await scenario({ store, outside, sql, batchWaits });
      const metrics = await (await fetch(`${url}/metrics`, { headers })).text();
      const families = new Map(parsePrometheus(metrics).map((family) => [family.name, family]));
      return { retries: families.get("actuate_store_batch_retries_total"), warnings };
    } finally {
      outside.release();
      await sql.end();
      await stop();
    }
  }

  test("a batch of run writes a deadlock broke off is written again one write at a time, counted in /metrics and logged once", async () => {
    const { retries, warnings } = await brokenOff(async ({ store, outside, sql, batchWaits }) => {
      const now = Date.now();
      const runs = Array.from({ length: 48 }, (_, i) =>
        newRun({
          principal: { kind: "service", id: "outside" },
          requestId: `outside-${i}`,
          input: { n: i },
          contract: { name: "load.three-steps", contractHash: "c".repeat(64) },
          releaseVersion: "l1",
          fingerprint: "f".repeat(64),
          lease: { owner: "worker", until: now + 600_000 },
          now,
        }),
      );
      await Promise.all(runs.map(({ execution, run }) => store.runs.admit(execution, run)));
      const ids = runs.map(({ run }) => run.id).sort();
      const last = ids.at(-1) as string;
      // The outside transaction holds the run with the highest id.
      await outside.unsafe("select id from workflow_runs where id = $1 for update", [last]);
      const ending = { status: "succeeded", output: { done: true }, errorCode: null, errorMessage: null } as const;
      // All queued in one turn: each lane's batch holds its runs in id order, so the one with the last
      // run waits for it holding the others.
      const finished = Promise.all(ids.map((id) => store.runs.finish("worker", id, { ...ending, finishedAt: now })));
      await batchWaits();
      // It then locks the other runs, last first, and waits for the batch: a circle PostgreSQL breaks
      // by failing the batch. The batch's writes are tried again, one at a time, and all go through
      // once this transaction ends.
      await outside.unsafe(`select id from workflow_runs where id <> $1 order by id collate "C" desc for update`, [
        last,
      ]);
      await outside.unsafe("commit");
      expect(await finished).toEqual(ids.map(() => ({ saved: true })));
      const stored = await sql`select status, count(*)::int as runs from workflow_runs group by status`;
      expect([...stored]).toEqual([{ status: "succeeded", runs: 48 }]);
    });
    expect(retries).toMatchObject({
      type: "COUNTER",
      metrics: [{ labels: { store: "runs", reason: "deadlock" }, value: "1" }],
    });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("writes (runs) failed as a whole (deadlock: deadlock detected)");
  }, 60_000);

  test("a batch of claims a deadlock broke off is claimed again key by key: each claim answered, counted, logged once", async () => {
    const { retries, warnings } = await brokenOff(async ({ store, outside, batchWaits }) => {
      const rows = Array.from({ length: 8 }, (_, i) => row({ principalId: "outside", requestId: `key-${i}` }));
      const [first, last] = [rows[0] as ExecutionRow, rows.at(-1) as ExecutionRow];
      const insert = `insert into executions (id, request_id, principal_kind, principal_id, action, kind, release_version,
          contract_hash, input_fingerprint, input, input_bytes, status, created_at)
        values ($1, $2, 'user', 'outside', 'test.echo', 'function', 't1', 'c', 'f', '{}', 2, 'running', 0)
        on conflict do nothing`;
      const theirs = [Bun.randomUUIDv7(), Bun.randomUUIDv7()] as const;
      // The outside transaction inserts the last key; the batch inserts the keys in order and waits for it.
      await outside.unsafe(insert, [theirs[1], last.requestId]);
      const claims = Promise.all(rows.map((r) => store.executions.claim(r)));
      await batchWaits();
      // Then it inserts the first key, which the batch holds: a circle, and the batch is broken off.
      await outside.unsafe(insert, [theirs[0], first.requestId]);
      await outside.unsafe("commit");
      expect((await claims).map((claim) => [claim.created, claim.row.id])).toEqual([
        [false, theirs[0]],
        ...rows.slice(1, -1).map((r) => [true, r.id]),
        [false, theirs[1]],
      ]);
    });
    expect(retries).toMatchObject({
      metrics: [{ labels: { store: "execution_claims", reason: "deadlock" }, value: "1" }],
    });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("a batch of 8 writes (execution_claims) failed as a whole (deadlock");
  }, 60_000);
});

describe.skipIf(!pg)("PostgreSQL: writes that lock many rows", () => {
  let database: TestDatabase;
  let store: Store;
  let sql: postgres.Sql;
  beforeAll(async () => {
    database = await (pg as NonNullable<typeof pg>).create();
    store = await openStore(database.url);
    sql = postgres(database.url, { max: 3, onnotice: () => {} });
  });
  afterAll(async () => {
    await sql.end();
    await store.close();
    await database.drop();
  });

  /** Resolves once a backend of the database (other than `except`) waits for a lock. */
  const someoneWaits = async (except: number[]) => {
    await eventually(async () => {
      const [row] = await sql`select count(*)::int as waiting from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and pid <> all(${except}::int[])`;
      return (row?.waiting ?? 0) > 0;
    }, 60_000);
    return "waited" as const;
  };

  const backendPid = async (connection: postgres.ReservedSql) =>
    ((await connection`select pg_backend_pid() as pid`) as unknown as [{ pid: number }])[0].pid;

  test("the sweep of a dead instance's executions passes over a row another transaction holds instead of waiting", async () => {
    const now = Date.now();
    const dead = await openStore(database.url);
    const execution = row({ kind: "function", status: "running" });
    try {
      await dead.executions.claim(execution);
      await dead.instances.keepAlive(now - 10_000, now - 5_000); // its last heartbeat, long overdue
    } finally {
      await dead.close();
    }
    const holder = await sql.reserve();
    try {
      const pid = await backendPid(holder);
      await holder.unsafe("begin");
      await holder.unsafe("select id from executions where id = $1 for update", [execution.id]);
      const swept = store.instances.keepAlive(now, now + 10_000);
      expect(await Promise.race([swept, someoneWaits([pid])])).toEqual([]);
      await holder.unsafe("commit");
    } finally {
      holder.release();
    }
    expect(await store.instances.keepAlive(now, now + 10_000)).toEqual([execution.id]);
    expect(await store.executions.get(execution.id)).toMatchObject({ errorCode: "execution_interrupted" });
  }, 60_000);

  test("log lines are inserted in key order, whatever order a batch holds them in", async () => {
    const [first, second] = [Bun.randomUUIDv7(), Bun.randomUUIDv7()].sort() as [string, string];
    const line = (executionId: string): LogRow => ({
      executionId,
      seq: 0,
      at: 0,
      level: "info",
      step: null,
      line: "x",
    });
    const [holder, other] = [await sql.reserve(), await sql.reserve()];
    try {
      const pids = [await backendPid(holder), await backendPid(other)];
      // Another instance is writing the second execution's line.
      await holder.unsafe("begin");
      await holder.unsafe(
        "insert into execution_logs (execution_id, seq, at, level, line) values ($1, 0, 0, 'info', 'y')",
        [second],
      );
      // One batch, the second execution's line queued first: the first's is inserted before it waits.
      const appended = Promise.all([
        store.executionLogs.append([line(second)]),
        store.executionLogs.append([line(first)]),
      ]);
      await someoneWaits(pids);
      // So a third writer of the first execution's line waits for that batch rather than going ahead of it.
      await other.unsafe("begin");
      const third = other.unsafe(
        "insert into execution_logs (execution_id, seq, at, level, line) values ($1, 0, 0, 'info', 'z') on conflict do nothing",
        [first],
      );
      const bothWait = async () => {
        await eventually(async () => {
          const [row] = await sql`select count(*)::int as waiting from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock'`;
          return row?.waiting === 2;
        }, 60_000);
        return "both wait" as const;
      };
      expect(await Promise.race([third.then(() => "went ahead" as const), bothWait()])).toBe("both wait");
      await holder.unsafe("commit");
      await appended;
      await third;
      await other.unsafe("commit");
    } finally {
      holder.release();
      other.release();
    }
    const stored = await sql`select execution_id, line from execution_logs where execution_id in (${first}, ${second})
      order by execution_id`;
    expect([...stored]).toEqual([
      { execution_id: first, line: "x" },
      { execution_id: second, line: "y" },
    ]);
  }, 60_000);
});
