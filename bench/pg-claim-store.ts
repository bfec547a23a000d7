// The PostgreSQL claim path alone, no HTTP: 32 callers each claim a fresh request id, settle it at once
// (a handler that ends in the same turn) and wait for the commit, against the stores of several builds
// in one process, interleaved. Usage: bun bench/pg-claim-store.ts <checkout> [<checkout> …] (each with
// node_modules; "." is this tree). Env: BENCH_SECONDS (per round, default 3), BENCH_ROUNDS (default 3).
import { loadavg } from "node:os";
import { resolve } from "node:path";
import type { Store } from "../src/store/store.ts";
import { cleanup, freshPgDatabase, median, percentile } from "./lib.ts";

const CALLERS = 32;

interface Build {
  dir: string;
  store: Store;
  url: string;
}

interface Result {
  rps: number;
  p50: number;
  p99: number;
  /** CPU per invoke, µs: this process (the store) and the database's backends. */
  clientUs: number;
  backendUs: number;
  /** Transactions the database committed per invoke (pg_stat_database, read after its counters caught up). */
  commits: number;
}

const TICK_US = 1e6 / 100; // USER_HZ

/** CPU time (µs) the server processes of one database have used so far (read from /proc; same machine). */
async function commitCount(url: string): Promise<number> {
  const { default: postgres } = await import("postgres");
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await Bun.sleep(1100);
    const [row] = await sql`select xact_commit::int as n from pg_stat_database where datname = current_database()`;
    return row?.n as number;
  } finally {
    await sql.end();
  }
}

async function backendCpuUs(url: string): Promise<number> {
  const { default: postgres } = await import("postgres");
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const pids =
      await sql`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`;
    let ticks = 0;
    for (const { pid } of pids) {
      const stat = await Bun.file(`/proc/${pid}/stat`)
        .text()
        .catch(() => "");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11] ?? 0) + Number(fields[12] ?? 0);
    }
    return ticks * TICK_US;
  } finally {
    await sql.end();
  }
}

function row(): Parameters<Store["executions"]["claim"]>[0] {
  const now = Date.now();
  return {
    id: Bun.randomUUIDv7(),
    requestId: crypto.randomUUID(),
    principalKind: "service",
    principalId: "bench",
    action: "math.add",
    kind: "function",
    releaseVersion: "v1",
    contractHash: "h",
    inputFingerprint: "f",
    input: { a: 1, b: 2 },
    status: "running",
    output: null,
    errorCode: null,
    errorMessage: null,
    createdAt: now,
    startedAt: now,
    finishedAt: null,
    scheduledBy: null,
  };
}

/** One invoke's writes as the engine makes them: claim (early when the store can), settle, durable. */
async function invoke(store: Store): Promise<void> {
  const executions = store.executions;
  const claim = await (executions.claimToRun ?? executions.claim).call(executions, row());
  const settled = { status: "succeeded" as const, output: { sum: 3 }, errorCode: null, errorMessage: null };
  await executions.settle(claim.row.id, { ...settled, finishedAt: Date.now() });
}

async function round({ store, url }: Build, seconds: number): Promise<Result> {
  const commitsBefore = await commitCount(url);
  const backendBefore = await backendCpuUs(url);
  const cpuBefore = process.cpuUsage();
  const deadline = performance.now() + seconds * 1000;
  const latencies: number[] = [];
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (performance.now() < deadline) {
        const started = performance.now();
        await invoke(store);
        latencies.push(performance.now() - started);
      }
    }),
  );
  const cpu = process.cpuUsage(cpuBefore);
  const backend = (await backendCpuUs(url)) - backendBefore;
  const commits = (await commitCount(url)) - commitsBefore;
  latencies.sort((a, b) => a - b);
  const n = latencies.length;
  return {
    rps: n / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    clientUs: (cpu.user + cpu.system) / n,
    backendUs: backend / n,
    commits: commits / n,
  };
}

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("usage: bun bench/pg-claim-store.ts <checkout> [<checkout> …]");
const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
console.log(`load average before: ${loadavg().map((l) => l.toFixed(2))}`);
try {
  const builds: Build[] = [];
  for (const dir of dirs) {
    const { openStore } = (await import(resolve(dir, "src/store/open.ts"))) as typeof import("../src/store/open.ts");
    const url = await freshPgDatabase("actuate_claims");
    builds.push({ dir, url, store: await openStore(url) });
  }
  for (const build of builds) await round(build, 1);
  const results = new Map<string, Result[]>(builds.map((b) => [b.dir, []]));
  for (let r = 1; r <= rounds; r++) {
    for (const build of builds) {
      const x = await round(build, seconds);
      results.get(build.dir)?.push(x);
      const cpu = `cpu/invoke ${x.clientUs.toFixed(0)} + ${x.backendUs.toFixed(0)} µs, ${x.commits.toFixed(3)} commits/invoke`;
      console.log(
        `round ${r} ${build.dir.padEnd(16)} ${x.rps.toFixed(0).padStart(6)}/s  p50 ${x.p50.toFixed(1)} p99 ${x.p99.toFixed(1)} ms  ${cpu}`,
      );
    }
  }
  for (const [dir, rs] of results) {
    const m = (pick: (x: Result) => number) => median(rs.map(pick)).toFixed(1);
    const cpu = `cpu/invoke: store ${m((x) => x.clientUs)} µs, database ${m((x) => x.backendUs)} µs; commits/invoke ${median(rs.map((x) => x.commits)).toFixed(3)}`;
    console.log(
      `${dir.padEnd(16)} ${m((x) => x.rps)} invokes/s  p50 ${m((x) => x.p50)} ms  p99 ${m((x) => x.p99)} ms  ${cpu}`,
    );
  }
  console.log(`load average after: ${loadavg().map((l) => l.toFixed(2))}`);
  for (const build of builds) await build.store.close();
} finally {
  await cleanup();
}
