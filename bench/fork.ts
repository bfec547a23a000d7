// `bun bench/fork.ts` (issue #44 §2, docs/decisions/forks.md): the time of `EnvironmentStore.fork` of an
// environment holding ENTITIES entities, LINKS links and FILES file rows, with and without its data, on
// SQLite and PostgreSQL, and whether the source keeps serving meanwhile. A server in hosting mode runs in
// this process over the store the fork is called on (as the control API calls it: on SQLite the fork's
// slices share the serving connection and event loop); a probe process invokes `math.add` in the source
// (PROBE_CONNECTIONS callers, each every PROBE_INTERVAL_MS; each request's start and latency recorded), from before the fork to after
// it. Its p50 and p99 before the fork and during it are compared: the budget is ≤ 5 s a fork, p99 during
// ≤ 2× before. Each database is measured ROUNDS times (a fork each, the source growing no further).
// Env: ENTITIES (default 100000), LINKS (50000), FILES (10000), ROUNDS (2), PROBE_INTERVAL_MS (10), BENCH_DATABASE_URL (PostgreSQL
// server, as bench/run.ts), BENCH_ONLY (a regular expression over "sqlite" / "postgres").
import { Database } from "bun:sqlite";
import { join } from "node:path";
import postgres from "postgres";
import { loadConfig } from "../src/config.ts";
import { bundlesDir, startServer } from "../src/main.ts";
import { publishRelease } from "../src/release/publish.ts";
import { openStore } from "../src/store/open.ts";
import { cleanup, freePort, freshPgDatabase, LAUNCH_ENV, percentile, ROOT_DIR, tempDir } from "./lib.ts";

const ENTITIES = Number(process.env.ENTITIES ?? 100_000);
const LINKS = Number(process.env.LINKS ?? 50_000);
const FILES = Number(process.env.FILES ?? 10_000);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const PROBE_CONNECTIONS = 4;
/** Each caller's pace: 4 callers every 10 ms, 400 invokes a second. */
const PROBE_INTERVAL_MS = Number(process.env.PROBE_INTERVAL_MS ?? 10);
const WARMUP_MS = 1_500;
const BEFORE_MS = 3_000;
const AFTER_MS = 300;
const BUDGET = { forkS: 5, p99Ratio: 2 };
const INVOKE_PATH = "/actions/math.add/invoke";

/** Epoch milliseconds with a fraction: comparable between this process and the probe's. */
const now = () => performance.timeOrigin + performance.now();

if (process.argv[2] === "--probe") await probe(process.argv[3] as string, process.argv[4] as string);
else await main();

/** The probe process: invokes until SIGUSR2 (lib.ts ends a process at SIGTERM), then prints each request's [start, latency] as JSON. */
async function probe(url: string, key: string): Promise<void> {
  const samples: [number, number][] = [];
  let stopping = false;
  process.on("SIGUSR2", () => {
    stopping = true;
  });
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  // Each caller sends a request every PROBE_INTERVAL_MS (or as soon as its last is answered, when later):
  // a paced load, as callers are, not a closed loop that keeps the server saturated.
  const caller = async () => {
    while (!stopping) {
      const started = now();
      const response = await fetch(url, {
        method: "POST",
        headers,
        body: JSON.stringify({ requestId: crypto.randomUUID(), input: { a: 1, b: 2 } }),
      });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`invoke answered ${response.status}`);
      samples.push([started, now() - started]);
      const wait = started + PROBE_INTERVAL_MS - now();
      if (wait > 0) await Bun.sleep(wait);
    }
  };
  await Promise.all(Array.from({ length: PROBE_CONNECTIONS }, caller));
  console.log(JSON.stringify(samples));
}

interface Round {
  dialect: string;
  forkMs: number;
  forkNoDataMs: number;
  copied: string;
  before: { p50: number; p99: number; n: number };
  during: { p50: number; p99: number; n: number };
}

async function main(): Promise<void> {
  const only = new RegExp(process.env.BENCH_ONLY ?? ".");
  const rounds: Round[] = [];
  try {
    for (const dialect of ["sqlite", "postgres"].filter((name) => only.test(name))) {
      rounds.push(...(await measure(dialect)));
    }
  } finally {
    await cleanup();
  }
  console.log(
    `\nForks of ${ENTITIES.toLocaleString("en")} entities, ${LINKS.toLocaleString("en")} links, ${FILES.toLocaleString("en")} files; the source invoked by ${PROBE_CONNECTIONS} callers, each every ${PROBE_INTERVAL_MS} ms, meanwhile (ms)\n`,
  );
  console.log(
    "| database | fork, data | fork, no data | invoke p50 before → during | p99 before → during | p99 × | within budget |",
  );
  console.log("|---|---|---|---|---|---|---|");
  for (const r of rounds) {
    const ratio = r.during.p99 / r.before.p99;
    const ok = r.forkMs / 1000 <= BUDGET.forkS && ratio <= BUDGET.p99Ratio;
    console.log(
      `| ${r.dialect} | ${(r.forkMs / 1000).toFixed(2)} s | ${r.forkNoDataMs.toFixed(0)} ms | ${r.before.p50.toFixed(2)} → ${r.during.p50.toFixed(2)} | ${r.before.p99.toFixed(2)} → ${r.during.p99.toFixed(2)} (${r.before.n} / ${r.during.n} invokes) | ${ratio.toFixed(2)} | ${ok ? "yes" : "NO"} |`,
    );
  }
  console.log(`\ncopied each time: ${rounds[0]?.copied ?? "-"}`);
}

async function measure(dialect: string): Promise<Round[]> {
  const began = performance.now();
  const dataDir = tempDir("actuate-bench-fork-");
  const url = dialect === "sqlite" ? `sqlite:${join(dataDir, "actuate.db")}` : await freshPgDatabase("bench_fork");
  const store = await openStore(url);
  const org = await store.control.organizations.create("acme", Date.now());
  const source = await store.control.environments.create("acme-prod", org.id, Date.now());
  await publishRelease({
    store: store.environment(source.id),
    bundlesDir: join(dataDir, "bundles"),
    dir: join(ROOT_DIR, "releases", "v1"),
    whenTaken: "refuse",
  });
  const filled = performance.now();
  await fill(url, source.id);
  await store.environment(source.id).data.ensureIndexes([
    { entity: "task", label: "ref", type: "string", unique: true },
    { entity: "task", label: "owner", type: "string", unique: false },
  ]);
  console.log(`${dialect}: source filled in ${((performance.now() - filled) / 1000).toFixed(1)} s`);

  const port = freePort();
  const serviceKey = `bench-${crypto.randomUUID()}`;
  const config = loadConfig({
    ...LAUNCH_ENV,
    PORT: String(port),
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    DATABASE_URL: url,
    SERVICE_KEYS: serviceKey,
    SERVICE_URL: `http://actuate.localhost:${port}`,
    HANDLE: "main",
    LOG_LEVEL: "warn",
    DRAIN_READY_MS: "0",
  });
  if (bundlesDir(config) !== join(dataDir, "bundles")) throw new Error("the bundles folder is not the server's");
  const server = await startServer(config, { store, log: () => {} });
  const rounds: Round[] = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const probeProc = Bun.spawn(
        [
          "bun",
          join(import.meta.dir, "fork.ts"),
          "--probe",
          `http://acme-prod.actuate.localhost:${port}${INVOKE_PATH}`,
          serviceKey,
        ],
        { cwd: ROOT_DIR, stdin: "ignore", stdout: "pipe", stderr: "inherit" },
      );
      const output = new Response(probeProc.stdout).text();
      await Bun.sleep(WARMUP_MS);
      const beforeFrom = now();
      await Bun.sleep(BEFORE_MS);
      const forkFrom = now();
      const { copied } = await store.control.environments.fork(source.id, {
        handle: `acme-pr-${round}`,
        organization: org.id,
        at: Date.now(),
        data: true,
        secrets: true,
        expiresAt: null,
      });
      const forkTo = now();
      await Bun.sleep(AFTER_MS);
      probeProc.kill("SIGUSR2");
      const samples = JSON.parse(await output) as [number, number][];
      await probeProc.exited;
      // Without data: what a fork of the release and variables alone costs.
      const bare = now();
      await store.control.environments.fork(source.id, {
        handle: `acme-bare-${round}`,
        organization: org.id,
        at: Date.now(),
        data: false,
        secrets: true,
        expiresAt: null,
      });
      const forkNoDataMs = now() - bare;
      const stats = (from: number, to: number) => {
        const latencies = samples
          .filter(([start, ms]) => start + ms >= from && start < to)
          .map(([, ms]) => ms)
          .sort((a, b) => a - b);
        return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), n: latencies.length };
      };
      rounds.push({
        dialect,
        forkMs: forkTo - forkFrom,
        forkNoDataMs,
        copied: JSON.stringify(copied),
        before: stats(beforeFrom, forkFrom),
        during: stats(forkFrom, forkTo),
      });
      console.log(`${dialect} round ${round}: fork ${(forkTo - forkFrom).toFixed(0)} ms`);
    }
  } finally {
    await server.stop();
  }
  console.log(`${dialect}: measured in ${((performance.now() - began) / 1000).toFixed(0)} s`);
  return rounds;
}

/** The source's data: ENTITIES tasks (~300-byte documents), LINKS links between them, FILES file rows. */
async function fill(url: string, env: number): Promise<void> {
  const series = (n: number, pg: boolean) =>
    pg
      ? `generate_series(1, ${n}) as g(i)`
      : `(with recursive s(i) as (select 1 union all select i + 1 from s where i < ${n}) select i from s) as g`;
  const statements = (pg: boolean) => {
    const doc = pg
      ? `json_build_object('ref', 'ref-' || i, 'title', 'Task number ' || i, 'done', i % 3 = 0, 'owner', 'user-' || (i % 1000), 'notes', repeat('ab12', 48))::jsonb`
      : `json_object('ref', 'ref-' || i, 'title', 'Task number ' || i, 'done', json(iif(i % 3 = 0, 'true', 'false')), 'owner', 'user-' || (i % 1000), 'notes', printf('%.192c', 'a'))`;
    return [
      `insert into data_attrs (environment, id, entity, label, created_at) values
         (${env}, 'attr-ref', 'task', 'ref', 0), (${env}, 'attr-owner', 'task', 'owner', 0)`,
      `insert into data_entities (environment, id, entity, doc, created_at, updated_at)
         select ${env}, 'task-' || i, 'task', ${doc}, 1800000000000 + i, 1800000000000 + i from ${series(ENTITIES, pg)}`,
      `insert into data_links (environment, link, source_id, target_id, created_at)
         select ${env}, 'task.parent', 'task-' || i, 'task-' || (i % ${ENTITIES} + 1), 1800000000000 + i from ${series(LINKS, pg)}`,
      `insert into files (environment, path, content_type, size, sha256, owner_kind, owner_id, created_at, updated_at)
         select ${env}, 'files/' || i || '.bin', 'application/octet-stream', 4096, ${pg ? "repeat('e', 64)" : "printf('%.64c', 'e')"}, 'user', 'user-' || (i % 1000),
           1800000000000, 1800000000000 from ${series(FILES, pg)}`,
      `insert into variables (environment, name, secret, value, key_id, updated_at, updated_by) values
         (${env}, 'REGION', ${pg ? "false" : "0"}, 'eu', null, 0, 'bench'),
         (${env}, 'STRIPE_KEY', ${pg ? "true" : "1"}, 'sealed', 'key', 0, 'bench')`,
    ];
  };
  if (url.startsWith("sqlite:")) {
    const db = new Database(url.slice("sqlite:".length));
    db.exec("PRAGMA busy_timeout = 5000");
    db.transaction(() => {
      for (const statement of statements(false)) db.run(statement);
    })();
    db.close();
    return;
  }
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  for (const statement of statements(true)) await sql.unsafe(statement);
  await sql.unsafe("vacuum analyze");
  await sql.end();
}
