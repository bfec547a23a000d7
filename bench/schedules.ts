// `bun bench/schedules.ts` (part of `bun run bench`): 10 000 delayed invocations (`ctx.schedule`'s rows)
// all due at once drain through one server, against the rate at which the same server admits workflow
// runs (issue #20: the drain must keep up with admission). Both on PostgreSQL and on SQLite.
// Admission: a closed loop of CONCURRENCY clients posting `bench.three-steps` invocations (202 once the
// run is admitted) for BENCH_SECONDS; the runs are then let finish. Drain: DUE rows for `bench.noop`
// inserted straight into the store, then made due together; the clock runs from their due time until the last
// of their executions has succeeded.
// Env: BENCH_SECONDS (default 4), BENCH_DATABASE_URL (PostgreSQL server; default local), BENCH_ONLY
// (postgres or sqlite).
import { join } from "node:path";
import { openStore } from "../src/store/open.ts";
import type { ScheduledRow } from "../src/store/rows.ts";
import type { Store } from "../src/store/store.ts";
import { cleanup, freePort, freshPgDatabase, LAUNCH_ENV, startProcess, tempDir, waitHealthy } from "./lib.ts";

const DUE = 10_000;
const CONCURRENCY = 32;
const DUE_IN_MS = 500;
const serviceKey = `bench-${crypto.randomUUID()}`;
const headers = { Authorization: `Bearer ${serviceKey}`, "Content-Type": "application/json" };

interface Figures {
  dialect: string;
  admittedPerS: number;
  drainPerS: number;
  startedPerS: number;
  drainS: number;
}

const seconds = Number(process.env.BENCH_SECONDS ?? 4);

async function admission(base: string): Promise<number> {
  let admitted = 0;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  const client = async (c: number) => {
    for (let i = 0; performance.now() < deadline; i++) {
      const res = await fetch(`${base}/actions/bench.three-steps/invoke`, {
        method: "POST",
        headers,
        body: JSON.stringify({ requestId: crypto.randomUUID(), input: { n: c * 1_000_000 + i } }),
      });
      if (res.status !== 202) throw new Error(`invoke: expected 202, got ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
      admitted++;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, c) => client(c)));
  return admitted / ((performance.now() - start) / 1000);
}

async function measure(dialect: string, databaseUrl: string): Promise<Figures> {
  const port = freePort();
  const proc = startProcess({
    name: `actuate-${dialect}`,
    cmd: ["bun", "src/cli/main.ts", "start", "--release", "bench/release"],
    env: {
      ...LAUNCH_ENV,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: tempDir("actuate-bench-data-"),
      SERVICE_KEYS: serviceKey,
      DATABASE_URL: databaseUrl,
    },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitHealthy(`${base}/healthz`, proc);
  const store = await openStore(databaseUrl);
  try {
    return await drainAgainstAdmission(dialect, base, store, databaseUrl);
  } finally {
    await store.close();
    await proc.stop();
  }
}

async function drainAgainstAdmission(
  dialect: string,
  base: string,
  store: Store,
  databaseUrl: string,
): Promise<Figures> {
  await admission(base); // warm-up
  const admittedPerS = await admission(base);
  const busy = async (status: "queued" | "running") =>
    (await store.runs.list({ status, limit: 1, maxValueBytes: 0 })).length > 0;
  while ((await busy("queued")) || (await busy("running"))) await Bun.sleep(100);

  // Inserted far ahead, then made due all at once (one statement), so the insert's duration does not count.
  const later = Date.now() + 3_600_000;
  const rows: ScheduledRow[] = Array.from({ length: DUE }, (_, n) => {
    const id = Bun.randomUUIDv7();
    return {
      id,
      principalKind: "service",
      principalId: "bench",
      principalClaims: null,
      action: "bench.noop",
      input: { n },
      requestId: id,
      dueAt: later,
      scheduledBy: id,
      status: "pending",
      executionId: null,
      leaseOwner: null,
      leaseExpiresAt: null,
      createdAt: Date.now(),
      updatedAt: Date.now(),
    };
  });
  await store.delayedInvocations.insert(rows);
  const dueAt = Date.now() + DUE_IN_MS;
  await execute(databaseUrl, `update scheduled_invocations set due_at = ${dueAt} where due_at = ${later}`);
  let startedAt = 0;
  for (;;) {
    await Bun.sleep(50);
    const pending = await store.delayedInvocations.list({ status: "pending", limit: 1 });
    if (pending.length === 0 && startedAt === 0) startedAt = Date.now();
    const open = await store.executions.list({ action: "bench.noop", status: "running", limit: 1, maxValueBytes: 0 });
    if (startedAt !== 0 && open.length === 0) break;
  }
  const drainS = (Date.now() - dueAt) / 1000;
  const succeeded = await countSucceeded(store);
  if (succeeded !== DUE) throw new Error(`expected ${DUE} succeeded executions of bench.noop, found ${succeeded}`);
  return { dialect, admittedPerS, drainPerS: DUE / drainS, startedPerS: DUE / ((startedAt - dueAt) / 1000), drainS };
}

/** One statement on the database, over a connection of its own. */
async function execute(url: string, statement: string): Promise<void> {
  if (url.startsWith("postgres")) {
    const { default: postgres } = await import("postgres");
    const client = postgres(url, { max: 1, onnotice: () => {} });
    await client.unsafe(statement);
    await client.end();
    return;
  }
  const { Database } = await import("bun:sqlite");
  const client = new Database(url.replace(/^sqlite:/, ""));
  client.exec("PRAGMA busy_timeout = 5000");
  client.run(statement);
  client.close();
}

async function countSucceeded(store: Store): Promise<number> {
  let count = 0;
  let beforeId: string | undefined;
  for (;;) {
    const page = await store.executions.list({
      action: "bench.noop",
      status: "succeeded",
      beforeId,
      limit: 1000,
      maxValueBytes: 0,
    });
    count += page.length;
    if (page.length < 1000) return count;
    beforeId = page.at(-1)?.id;
  }
}

const only = process.env.BENCH_ONLY;
const figures: Figures[] = [];
try {
  if (!only || only === "postgres")
    figures.push(await measure("postgres", await freshPgDatabase("actuate_sched_bench")));
  if (!only || only === "sqlite")
    figures.push(await measure("sqlite", `sqlite:${join(tempDir("actuate-sched-db-"), "bench.db")}`));
  console.log(`\n${DUE} due delayed invocations vs workflow admission (${CONCURRENCY} clients, ${seconds} s)`);
  console.log(
    `${"database".padEnd(10)}${"admitted/s".padStart(12)}${"drained/s".padStart(12)}${"started/s".padStart(12)}${"drain s".padStart(10)}   drain ≥ admission`,
  );
  for (const f of figures) {
    console.log(
      `${f.dialect.padEnd(10)}${f.admittedPerS.toFixed(0).padStart(12)}${f.drainPerS.toFixed(0).padStart(12)}${f.startedPerS.toFixed(0).padStart(12)}${f.drainS.toFixed(2).padStart(10)}   ${f.drainPerS >= f.admittedPerS ? "yes" : "NO"}`,
    );
  }
} finally {
  await cleanup();
}
