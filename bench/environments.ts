// `bun bench/environments.ts` (issue #41 §5; not in `bun run bench`: ~6 minutes of its own): one server process in hosting mode
// (`bun src/cli/main.ts start` with SERVICE_URL) holding ENVIRONMENTS environments made through
// store.control, each with the example release (releases/v1) active, of which BUSY are invoked, beside a
// process in single mode with the same release, on each database (SQLite, PostgreSQL). It reports:
// (a) idle RSS: the hosting process with its environments (only the BUSY ones composed) minus the single
//     process, each after the same warm-up (50 invokes in each busy environment) and IDLE_MS without requests;
// (b) the first invoke into a cold environment (not yet composed: its release loaded, engine started,
//     app built on that request), over COLD environments one after the other, p50 and p99;
// (c) invoke throughput (math.add, wrk, CONNECTIONS connections) in hosting mode, each request to the
//     next of the BUSY environments (by Host), against single mode with as many callers (BUSY service keys,
//     each request the next one's: the budget's line) and with one caller, in alternating rounds, with the server
//     CPU a request (steadier on a shared machine); measured in a fresh hosting process with the BUSY
//     environments composed, then again once the COLD ones are composed too.
// The environments' releases are published before the servers start: the release is built once and the same
// bundle is stored in each environment (`publishBuiltRelease`, its code stored once by hash); the time that
// takes is reported too.
// Env: ENVIRONMENTS (default 1000), BENCH_SECONDS (a round, default 4), BENCH_DATABASE_URL (PostgreSQL
// server, as bench/run.ts), BENCH_ONLY (a regular expression over "sqlite" / "postgres").
import { readFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { buildRelease, publishBuiltRelease } from "../src/release/publish.ts";
import { openStore } from "../src/store/open.ts";
import { postgresCpuMs, postmasterOf, processCpuMs } from "./cpu.ts";
import {
  BENCH_DIR,
  cleanup,
  DEFAULT_PG,
  freePort,
  freshPgDatabase,
  LAUNCH_ENV,
  median,
  type Proc,
  percentile,
  ROOT_DIR,
  startProcess,
  tempDir,
  waitHealthy,
} from "./lib.ts";

const ENVIRONMENTS = Number(process.env.ENVIRONMENTS ?? 1000);
const BUSY = Number(process.env.BUSY ?? 10);
const COLD = 100;
const WARMUP_INVOKES = 50;
const IDLE_MS = 2_000;
const ROUNDS = 3;
const CONNECTIONS = 32;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const BUDGET = { rssMiB: 100, coldP99Ms: 50, ratio: 0.9 };
const INVOKE_PATH = "/actions/math.add/invoke";
const BODY = JSON.stringify({ requestId: "{{uuid}}", input: { a: 1, b: 2 } });
const key = `bench-${crypto.randomUUID()}`;
/** Single mode's callers when its load comes from as many callers as hosting's busy environments (one key each). */
const callerKeys = Array.from({ length: BUSY }, (_, i) => (i === 0 ? key : `bench-caller-${i}-${crypto.randomUUID()}`));
const release = join(ROOT_DIR, "releases", "v1");

if (!Bun.which("wrk")) throw new Error("bench/environments.ts needs wrk (apt-get install wrk)");

const handleOf = (i: number) => `e${String(i).padStart(4, "0")}`;

interface Prepared {
  env: Record<string, string>;
  /** Handles of the environments, environment 1 (`main`) first. */
  handles: string[];
  createMs: number;
  publishMs: number;
}

/** A database with `count` environments (environment 1 and count - 1 of organization `bench`), releases/v1 active in each. */
async function prepare(databaseUrl: string, dataDir: string, count: number): Promise<Prepared> {
  const store = await openStore(databaseUrl);
  try {
    const handles = ["main"];
    const ids = [1];
    const created = performance.now();
    if (count > 1) {
      const org = await store.control.organizations.create("bench", Date.now());
      for (let i = 1; i < count; i++) {
        ids.push((await store.control.environments.create(handleOf(i), org.id, Date.now())).id);
        handles.push(handleOf(i));
      }
    }
    const createMs = performance.now() - created;
    const built = await buildRelease(release);
    const published = performance.now();
    for (const id of ids) {
      await publishBuiltRelease(built, {
        store: store.environment(id),
        bundlesDir: join(dataDir, "bundles"),
        whenTaken: "refuse",
      });
    }
    const publishMs = performance.now() - published;
    return {
      env: {
        DATA_DIR: dataDir,
        DATABASE_URL: databaseUrl,
        SERVICE_KEYS: callerKeys.join(","),
        STORAGE: "disk",
        HANDLE: "main",
      },
      handles,
      createMs,
      publishMs,
    };
  } finally {
    await store.close();
  }
}

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB$/m);
  if (!line?.[1]) throw new Error(`no VmRSS for ${pid}`);
  return Number(line[1]) / 1024;
}

interface Server {
  proc: Proc;
  port: number;
  /** The Host header of an environment (single mode: its address). */
  host(handle: string): string;
}

async function serve(name: string, env: Record<string, string>, hosting: boolean): Promise<Server> {
  const port = freePort();
  const proc = startProcess({
    name,
    cmd: ["bun", join(ROOT_DIR, "src", "cli", "main.ts"), "start"],
    env: {
      ...LAUNCH_ENV,
      ...env,
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      ...(hosting ? { SERVICE_URL: `http://actuate.localhost:${port}` } : {}),
    },
  });
  await waitHealthy(`http://127.0.0.1:${port}/healthz`, proc);
  const host = (handle: string) => (hosting ? `${handle}.actuate.localhost:${port}` : `127.0.0.1:${port}`);
  return { proc, port, host };
}

/** One invoke of math.add in an environment, by its Host header; throws unless it succeeded. */
async function invoke(server: Server, handle: string): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${server.port}${INVOKE_PATH}`, {
    method: "POST",
    headers: { host: server.host(handle), authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ requestId: crypto.randomUUID(), input: { a: 1, b: 2 } }),
  });
  const text = await response.text();
  if (response.status !== 200 || !text.includes('"sum":3')) {
    throw new Error(`invoke in ${handle} answered ${response.status}: ${text.slice(0, 300)}\n${server.proc.tail()}`);
  }
}

interface Load {
  rps: number;
  /** CPU of the server process a request, µs: steadier than rps on a shared machine. */
  cpuUs: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
}

/** wrk with bench/environments.lua: each request to the next of `hosts` (`host` or `host|token`). */
async function load(server: Server, hosts: string[]): Promise<Load> {
  const cpuBefore = processCpuMs(server.proc.proc.pid) ?? Number.NaN;
  const proc = Bun.spawn(
    [
      "wrk",
      "-t1",
      `-c${CONNECTIONS}`,
      `-d${SECONDS}s`,
      "--latency",
      "-s",
      join(BENCH_DIR, "environments.lua"),
      `http://127.0.0.1:${server.port}${INVOKE_PATH}`,
      "--",
      BODY,
      hosts.join(","),
      `Authorization: Bearer ${key}`,
      "Content-Type: application/json",
    ],
    { cwd: ROOT_DIR, stdout: "pipe", stderr: "pipe" },
  );
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  const line = out.split("\n").find((l) => l.startsWith("BENCH_JSON "));
  if (!line) throw new Error(`wrk printed no BENCH_JSON line:\n${out}${err}`);
  const r = JSON.parse(line.slice("BENCH_JSON ".length));
  const cpuUs = (((processCpuMs(server.proc.proc.pid) ?? Number.NaN) - cpuBefore) * 1000) / r.requests;
  return {
    rps: r.requests / (r.durationUs / 1e6),
    cpuUs,
    p50Ms: r.p50Us / 1000,
    p99Ms: r.p99Us / 1000,
    non2xx: r.non2xx,
  };
}

/**
 * CPU the hosting process (and PostgreSQL, given its postmaster) spend over IDLE_MS with no request: what
 * the composed environments' own loops cost, in % of one core.
 */
async function idleCpu(server: Server, postmaster: number | null): Promise<string> {
  const before = { server: processCpuMs(server.proc.proc.pid) ?? 0, db: postmaster ? postgresCpuMs(postmaster) : null };
  const started = performance.now();
  await Bun.sleep(IDLE_MS);
  const elapsed = performance.now() - started;
  const server_ = (((processCpuMs(server.proc.proc.pid) ?? 0) - before.server) / elapsed) * 100;
  const db = postmaster && before.db !== null ? (((postgresCpuMs(postmaster) ?? 0) - before.db) / elapsed) * 100 : null;
  return `idle CPU: hosting process ${fmt(server_)} %${db === null ? "" : `, PostgreSQL ${fmt(db)} %`} of a core`;
}

const fmt = (n: number, digits = 1) => n.toFixed(digits);
const show = (l: Load) => `${fmt(l.rps, 0)} rps, ${fmt(l.cpuUs, 0)} µs CPU a request, p99 ${fmt(l.p99Ms)} ms`;
const verdict = (ok: boolean) => (ok ? "within budget" : "OVER BUDGET");

/**
 * Alternating rounds (single, hosting over the busy environments, hosting into one environment) after a
 * warm-up of each; prints each round and the medians.
 */
async function throughput(
  one: Server,
  many: Server,
  busy: string[],
  label: string,
  postmaster: number | null,
): Promise<void> {
  console.log(`    ${label}, ${await idleCpu(many, postmaster)}`);
  await load(one, [one.host("main")]);
  await load(many, busy.map(many.host));
  // Single mode's load from as many callers as hosting has busy environments (each a principal of its own,
  // so each writes its own place of the executions' principal index, as each busy environment does).
  const callers = callerKeys.map((caller) => `${one.host("main")}|${caller}`);
  await load(one, callers);
  const rounds: { single: Load; singleCallers: Load; hosting: Load; hostingOne: Load }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const a = await load(one, [one.host("main")]);
    const d = await load(one, callers);
    const b = await load(many, busy.map(many.host));
    // The same process with every request to one environment: the router's cost apart from the environments'.
    const c = await load(many, [many.host("main")]);
    rounds.push({ single: a, singleCallers: d, hosting: b, hostingOne: c });
    const non2xx = a.non2xx + d.non2xx + b.non2xx + c.non2xx;
    console.log(
      `    round ${round + 1}: single ${show(a)}; single, ${callers.length} callers ${show(d)}; hosting ${show(b)}; ` +
        `hosting into one environment ${show(c)}` +
        `${non2xx > 0 ? `, non-2xx ${a.non2xx}/${d.non2xx}/${b.non2xx}/${c.non2xx}` : ""}`,
    );
  }
  const rps = (pick: (r: (typeof rounds)[number]) => Load) => median(rounds.map((r) => pick(r).rps));
  const cpu = (pick: (r: (typeof rounds)[number]) => Load) => median(rounds.map((r) => pick(r).cpuUs));
  const ratio = rps((r) => r.hosting) / rps((r) => r.single);
  const ratioCallers = rps((r) => r.hosting) / rps((r) => r.singleCallers);
  console.log(
    `(c) throughput, ${label} (median of ${ROUNDS}): hosting ${fmt(
      rps((r) => r.hosting),
      0,
    )} rps over ` +
      `${busy.length} environments / single with as many callers ${fmt(
        rps((r) => r.singleCallers),
        0,
      )} rps = ` +
      `${fmt(ratioCallers, 2)}× (budget ≥ ${BUDGET.ratio}: ${verdict(ratioCallers >= BUDGET.ratio)}); ` +
      `/ single with one caller ${fmt(
        rps((r) => r.single),
        0,
      )} rps = ${fmt(ratio, 2)}×; ` +
      `into one environment / single with one caller ${fmt(rps((r) => r.hostingOne) / rps((r) => r.single), 2)}×; ` +
      `server CPU a request: single ${fmt(
        cpu((r) => r.single),
        0,
      )} µs, single with ${busy.length} callers ` +
      `${fmt(
        cpu((r) => r.singleCallers),
        0,
      )} µs, hosting ${fmt(
        cpu((r) => r.hosting),
        0,
      )} µs, ` +
      `into one ${fmt(
        cpu((r) => r.hostingOne),
        0,
      )} µs`,
  );
}

async function measure(dialect: "sqlite" | "postgres"): Promise<void> {
  const dir = tempDir(`actuate-bench-environments-${dialect}-`);
  const databaseUrl = async (name: string) =>
    dialect === "sqlite" ? `sqlite:${join(dir, name, "actuate.db")}` : await freshPgDatabase(`bench_env_${name}`);
  console.log(`\n## ${dialect}: ${ENVIRONMENTS} environments, ${BUSY} busy`);

  const single = await prepare(await databaseUrl("single"), join(dir, "single"), 1);
  const hosted = await prepare(await databaseUrl("hosting"), join(dir, "hosting"), ENVIRONMENTS);
  console.log(
    `set-up: ${ENVIRONMENTS - 1} environments created in ${fmt(hosted.createMs / 1000, 2)} s, ` +
      `the release (built once) stored and activated in each in ${fmt(hosted.publishMs / 1000, 2)} s ` +
      `(${fmt(hosted.publishMs / ENVIRONMENTS, 2)} ms each)`,
  );

  let postmaster: number | null = null;
  if (dialect === "postgres") {
    const sql = postgres(process.env.BENCH_DATABASE_URL ?? DEFAULT_PG, { max: 1, onnotice: () => {} });
    postmaster = await postmasterOf(sql);
    await sql.end();
  }
  const one = await serve(`single-${dialect}`, single.env, false);
  let many = await serve(`hosting-${dialect}`, hosted.env, true);
  const busy = hosted.handles.slice(0, BUSY);
  const cold = hosted.handles.slice(BUSY, BUSY + COLD);
  const warmUp = async () => {
    for (let i = 0; i < WARMUP_INVOKES; i++) for (const handle of busy) await invoke(many, handle);
  };
  try {
    // (a) the same warm-up in both, then idle.
    for (let i = 0; i < WARMUP_INVOKES; i++) await invoke(one, "main");
    await warmUp();
    await Bun.sleep(IDLE_MS);
    const rssOne = rssMiB(one.proc.proc.pid);
    const rssMany = rssMiB(many.proc.proc.pid);
    const extra = rssMany - rssOne;
    console.log(
      `(a) idle RSS: hosting ${fmt(rssMany)} MiB (${ENVIRONMENTS} environments, ${BUSY} composed) - single ` +
        `${fmt(rssOne)} MiB = +${fmt(extra)} MiB (budget +${BUDGET.rssMiB}: ${verdict(extra <= BUDGET.rssMiB)})`,
    );

    // (b) cold environments, one after the other (the busy ones idle meanwhile), before any load: a
    // database just loaded (and vacuuming) would slow them for reasons of its own.
    const firsts: number[] = [];
    for (const handle of cold) {
      const started = performance.now();
      await invoke(many, handle);
      firsts.push(performance.now() - started);
    }
    const sorted = [...firsts].sort((a, b) => a - b);
    const p99 = percentile(sorted, 99);
    const p50Of = (values: number[]) =>
      fmt(
        percentile(
          [...values].sort((a, b) => a - b),
          50,
        ),
      );
    console.log(
      `(b) first invoke into a cold environment (${cold.length}): p50 ${fmt(percentile(sorted, 50))} ms, ` +
        `p99 ${fmt(p99)} ms, max ${fmt(sorted.at(-1) ?? 0)} ms (budget p99 ${BUDGET.coldP99Ms} ms: ` +
        `${verdict(p99 <= BUDGET.coldP99Ms)}); p50 of the first 20 ${p50Of(firsts.slice(0, 20))} ms, ` +
        `of the last 20 ${p50Of(firsts.slice(-20))} ms`,
    );
    await Bun.sleep(IDLE_MS);
    const rssAfter = rssMiB(many.proc.proc.pid);
    console.log(
      `    idle RSS after composing them: ${fmt(rssAfter)} MiB, ` +
        `${fmt(((rssAfter - rssMany) * 1024) / cold.length, 0)} KiB an environment composed`,
    );

    // (c) in a fresh hosting process with only the busy environments composed, as the issue sets it.
    await many.proc.stop();
    many = await serve(`hosting-${dialect}-2`, hosted.env, true);
    await warmUp();
    await throughput(one, many, busy, `${BUSY} composed`, postmaster);
    // … and again once the cold ones are composed too (idle, each with its own loops and listeners).
    for (const handle of cold) await invoke(many, handle);
    await throughput(one, many, busy, `${BUSY + cold.length} composed`, postmaster);
  } finally {
    await one.proc.stop();
    await many.proc.stop();
  }
}

const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : null;
console.log(
  `# bench/environments.ts — ${new Date().toISOString()}, Bun ${Bun.version}, ${navigator.hardwareConcurrency} CPUs`,
);
try {
  for (const dialect of ["sqlite", "postgres"] as const) {
    if (!only || only.test(dialect)) await measure(dialect);
  }
} finally {
  await cleanup();
}
