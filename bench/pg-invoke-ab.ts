// PostgreSQL invoke of several builds interleaved with a bare Bun.serve echo: the A/B behind BENCHMARKS.md's
// PostgreSQL claim-path figures. Usage: bun bench/pg-invoke-ab.ts <before-dir> [<dir> …, default this tree]
// (each a checkout with node_modules). Env: BENCH_SECONDS (per round, default 4), BENCH_ROUNDS (default 3).
import { loadavg } from "node:os";
import {
  cleanup,
  freePort,
  freshPgDatabase,
  type LoadResult,
  median,
  onCleanup,
  ROOT_DIR,
  runLoad,
  startProcess,
  tempDir,
  waitHealthy,
} from "./lib.ts";

const CONNECTIONS = 32;
const serviceKey = `bench-${crypto.randomUUID()}`;
const headers = { Authorization: `Bearer ${serviceKey}`, "Content-Type": "application/json" };
const bodyTemplate = JSON.stringify({ requestId: "{{uuid}}", input: { a: 1, b: 2 } });
const PATH = "/actions/math.add/invoke";

interface Target {
  name: string;
  url: string;
  /** Commits on the target's database so far (pg_stat_database; its counters lag by up to a second). */
  commits?: () => Promise<number>;
}

async function bare(): Promise<Target> {
  const port = freePort();
  const proc = startProcess({ name: "bare", cmd: ["bun", "bench/bare-echo.ts"], env: { PORT: String(port) } });
  await waitHealthy(`http://127.0.0.1:${port}/healthz`, proc);
  return { name: "bare echo", url: `http://127.0.0.1:${port}${PATH}` };
}

async function actuate(name: string, dir: string): Promise<Target> {
  const port = freePort();
  const env = {
    PORT: String(port),
    HOST: "127.0.0.1",
    DATA_DIR: tempDir("actuate-ab-"),
    SERVICE_KEYS: serviceKey,
    DATABASE_URL: await freshPgDatabase("actuate_ab"),
    LOG_LEVEL: "info",
  };
  const cmd = ["bun", "src/cli/main.ts", "start", "--release", "releases/v1"];
  const proc = startProcess({ name, cmd, env, cwd: dir });
  await waitHealthy(`http://127.0.0.1:${port}/healthz`, proc);
  const url = `http://127.0.0.1:${port}${PATH}`;
  const res = await fetch(url, {
    method: "POST",
    headers,
    body: bodyTemplate.replace("{{uuid}}", crypto.randomUUID()),
  });
  if (res.status !== 200) throw new Error(`${name} answered ${res.status} ${await res.text()}\n${proc.tail()}`);
  const { default: postgres } = await import("postgres");
  const sql = postgres(env.DATABASE_URL, { max: 1, onnotice: () => {} });
  onCleanup(() => sql.end());
  const commits = async () => {
    const [row] = await sql`select xact_commit::int as n from pg_stat_database where datname = current_database()`;
    return row?.n as number;
  };
  return { name, url, commits };
}

async function main() {
  const [before, ...others] = process.argv.slice(2);
  if (!before) throw new Error("usage: bun bench/pg-invoke-ab.ts <before-dir> [<dir> …]");
  const afters = others.length > 0 ? others : [ROOT_DIR];
  const seconds = Number(process.env.BENCH_SECONDS ?? 4);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  console.log(`load average before: ${loadavg().map((l) => l.toFixed(2))}`);
  const targets = [await bare(), await actuate("before", before)];
  for (const [i, dir] of afters.entries())
    targets.push(await actuate(afters.length > 1 ? `after ${i + 1}` : "after", dir));
  const results = new Map<string, LoadResult[]>(targets.map((t) => [t.name, []]));
  for (const t of targets) await runLoad({ url: t.url, headers, bodyTemplate, durationS: 1, connections: CONNECTIONS });
  await Bun.sleep(1500);
  const commitsBefore = await Promise.all(targets.map((t) => t.commits?.() ?? 0));
  for (let round = 1; round <= rounds; round++) {
    for (const t of targets) {
      const r = await runLoad({ url: t.url, headers, bodyTemplate, durationS: seconds, connections: CONNECTIONS });
      if (r.non2xx > 0) throw new Error(`${t.name}: ${r.non2xx} non-2xx answers`);
      results.get(t.name)?.push(r);
      console.log(
        `round ${round} ${t.name.padEnd(10)} ${r.rps.toFixed(0).padStart(7)} rps  p50 ${r.p50Ms} p99 ${r.p99Ms}`,
      );
    }
  }
  await Bun.sleep(1500);
  const commitsAfter = await Promise.all(targets.map((t) => t.commits?.() ?? 0));
  targets.forEach((t, i) => {
    if (!t.commits) return;
    const requests = (results.get(t.name) ?? []).reduce((sum, r) => sum + r.requests, 0);
    const perInvoke = ((commitsAfter[i] ?? 0) - (commitsBefore[i] ?? 0)) / requests;
    console.log(`${t.name}: ${perInvoke.toFixed(3)} commits per invoke (${requests} invokes)`);
  });
  const bareRps = median((results.get("bare echo") ?? []).map((r) => r.rps));
  for (const [name, rs] of results) {
    const rps = median(rs.map((r) => r.rps));
    const p50 = median(rs.map((r) => r.p50Ms));
    const p99 = median(rs.map((r) => r.p99Ms));
    console.log(
      `${name.padEnd(10)} ${rps.toFixed(0).padStart(7)} rps  ${(rps / bareRps).toFixed(3)}× bare  p50 ${p50} ms  p99 ${p99} ms`,
    );
  }
  console.log(`load average after: ${loadavg().map((l) => l.toFixed(2))}`);
}

try {
  await main();
} finally {
  await cleanup();
}
