// Reusable pieces for benchmark scenarios: subprocesses, health waits, load runs.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import packageJson from "../package.json" with { type: "json" };

export const BENCH_DIR = import.meta.dir;
export const ROOT_DIR = join(import.meta.dir, "..");

/**
 * The variables `bun run start` sets before it runs the server (package.json's `start`, as the image
 * does: docs/DEPLOY.md), read from the script itself, so that the servers measured run as shipped.
 */
export const LAUNCH_ENV: Record<string, string> = Object.fromEntries(
  [...(packageJson.scripts.start.match(/^(?:\w+=\S*\s+)*/)?.[0] ?? "").matchAll(/(\w+)=(\S*)/g)].map(
    ([, name, value]) => [name, value],
  ),
);

export interface Proc {
  name: string;
  proc: Subprocess;
  logPath: string;
  /** The last lines the process printed, for error messages. */
  tail(lines?: number): string;
  stop(): Promise<void>;
}

const running = new Set<Proc>();
const loadProcs = new Set<Subprocess>();
const tempDirs = new Set<string>();
const cleanupHooks: (() => Promise<void>)[] = [];

// A bench that dies half-way must not leave servers listening.
process.on("exit", () => {
  for (const p of running) p.proc.kill("SIGKILL");
  for (const p of loadProcs) p.kill("SIGKILL");
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    cleanup().finally(() => process.exit(130));
  });
}

/** Runs after every process is stopped, e.g. to drop a database the servers used. */
export function onCleanup(hook: () => Promise<void>): void {
  cleanupHooks.push(hook);
}

/** Stops every started process, then runs the cleanup hooks (newest first); safe to call twice. */
export async function cleanup(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop()));
  for (const hook of cleanupHooks.splice(0).reverse()) {
    try {
      await hook();
    } catch (error) {
      console.error(`cleanup: ${(error as Error).message}`);
    }
  }
}

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

export function startProcess(options: {
  name: string;
  cmd: string[];
  env?: Record<string, string>;
  cwd?: string;
}): Proc {
  const logPath = join(tempDir("actuate-bench-log-"), options.name.replace(/\W+/g, "-"));
  const proc = Bun.spawn(options.cmd, {
    cwd: options.cwd ?? ROOT_DIR,
    // No ready drain on SIGTERM (nothing routes by /readyz here): a stopped server goes at once.
    env: { ...process.env, DRAIN_READY_MS: "0", ...options.env },
    stdin: "ignore",
    stdout: Bun.file(`${logPath}.out`),
    stderr: Bun.file(`${logPath}.err`),
  });
  const handle: Proc = {
    name: options.name,
    proc,
    logPath,
    tail: (lines = 20) =>
      `${readLog(`${logPath}.out`)}${readLog(`${logPath}.err`)}`.trimEnd().split("\n").slice(-lines).join("\n"),
    async stop() {
      running.delete(handle);
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill("SIGTERM");
      const exited = await Promise.race([proc.exited.then(() => true), Bun.sleep(3000).then(() => false)]);
      if (!exited) proc.kill("SIGKILL");
    },
  };
  running.add(handle);
  return handle;
}

/** `actuate start` from this checkout on a free loopback port, with `env` over the bench's launch settings. */
export function startServerProcess(name: string, env: Record<string, string>): { url: string; proc: Proc } {
  const port = freePort();
  const proc = startProcess({
    name,
    cmd: ["bun", `${ROOT_DIR}/src/cli/main.ts`, "start"],
    env: { ...LAUNCH_ENV, ...env, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" },
  });
  return { url: `http://127.0.0.1:${port}`, proc };
}

/** `actuate release publish <dir>` from this checkout, with `env` (its database, its key); throws on failure. */
export function publishWithCli(dir: string, env: Record<string, string>): void {
  const published = Bun.spawnSync(["bun", `${ROOT_DIR}/src/cli/main.ts`, "release", "publish", dir], {
    cwd: ROOT_DIR,
    env: { ...process.env, ...env },
    stderr: "pipe",
  });
  if (published.exitCode !== 0) throw new Error(`release publish failed:\n${published.stderr}`);
}

function readLog(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

export function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = listener.port;
  listener.stop(true);
  return port;
}

/** Polls `url` until it answers 200 `{"ok":true}`; fails early if the process exits. */
export async function waitHealthy(url: string, proc: Proc, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.proc.exitCode !== null) {
      throw new Error(`${proc.name} exited with code ${proc.proc.exitCode} before it was healthy:\n${proc.tail()}`);
    }
    if (await isHealthy(url)) return;
    await Bun.sleep(100);
  }
  throw new Error(`${proc.name} not healthy at ${url} after ${timeoutMs} ms:\n${proc.tail()}`);
}

async function isHealthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
    const body = (await res.json()) as { ok?: unknown };
    return res.status === 200 && body.ok === true;
  } catch {
    return false;
  }
}

/** Every `{{uuid}}` in the template becomes its own fresh UUID v4 (the same rule as bench/invoke.lua). */
/** What one run of bench/load.ts prints (its last line, as JSON). */
export interface LoadReport {
  requests: number;
  errors: number;
  non2xx: number;
  p50: number;
  p99: number;
  rps: number;
}

export function fillTemplate(template: string): string {
  return template.replaceAll("{{uuid}}", () => crypto.randomUUID());
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)] ?? Number.NaN;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length % 2 === 1) return sorted[mid] ?? Number.NaN;
  return ((sorted[mid - 1] ?? Number.NaN) + (sorted[mid] ?? Number.NaN)) / 2;
}

export interface LoadOptions {
  url: string;
  headers: Record<string, string>;
  /** JSON body; each `{{uuid}}` is replaced by a fresh UUID v4 per request. */
  bodyTemplate: string;
  durationS: number;
  connections: number;
}

export interface LoadResult {
  tool: "wrk" | "bun";
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  socketErrors: number;
}

/** wrk when it is on PATH, else the Bun client; BENCH_LOAD=bun|wrk forces one. */
export function loadTool(): "wrk" | "bun" {
  const forced = process.env.BENCH_LOAD;
  if (forced === "wrk" || forced === "bun") return forced;
  return Bun.which("wrk") ? "wrk" : "bun";
}

export function runLoad(options: LoadOptions): Promise<LoadResult> {
  return loadTool() === "wrk" ? runWrk(options) : runBunLoad(options);
}

async function runWrk(options: LoadOptions): Promise<LoadResult> {
  const headerArgs = Object.entries(options.headers).map(([name, value]) => `${name}: ${value}`);
  const cmd = [
    "wrk",
    "-t1",
    `-c${options.connections}`,
    `-d${options.durationS}s`,
    "--latency",
    "-s",
    join(BENCH_DIR, "invoke.lua"),
    options.url,
    "--",
    options.bodyTemplate,
    ...headerArgs,
  ];
  const out = await capture(cmd);
  const line = out.split("\n").find((l) => l.startsWith("BENCH_JSON "));
  if (!line) throw new Error(`wrk printed no BENCH_JSON line:\n${out}`);
  const r = JSON.parse(line.slice("BENCH_JSON ".length)) as {
    requests: number;
    durationUs: number;
    non2xx: number;
    socketErrors: number;
    p50Us: number;
    p99Us: number;
  };
  return {
    tool: "wrk",
    requests: r.requests,
    rps: r.requests / (r.durationUs / 1e6),
    p50Ms: r.p50Us / 1000,
    p99Ms: r.p99Us / 1000,
    non2xx: r.non2xx,
    socketErrors: r.socketErrors,
  };
}

async function runBunLoad(options: LoadOptions): Promise<LoadResult> {
  const out = await capture(["bun", join(BENCH_DIR, "load.ts"), JSON.stringify(options)]);
  const r = JSON.parse(out.trim().split("\n").at(-1) ?? "null") as LoadReport;
  return {
    tool: "bun",
    requests: r.requests,
    rps: r.rps,
    p50Ms: r.p50,
    p99Ms: r.p99,
    non2xx: r.non2xx,
    socketErrors: r.errors,
  };
}

async function capture(cmd: string[]): Promise<string> {
  const proc = Bun.spawn(cmd, { cwd: ROOT_DIR, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  loadProcs.add(proc);
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  loadProcs.delete(proc);
  if (code !== 0) throw new Error(`${cmd[0]} exited with code ${code}:\n${out}${err}`);
  return out;
}

/** The PostgreSQL server benches use unless BENCH_DATABASE_URL names another. */
export const DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/postgres";

/** A fresh database on the benches' PostgreSQL server (`prefix_<random>`), dropped at cleanup; answers its URL. */
export async function freshPgDatabase(prefix: string): Promise<string> {
  const { default: postgres } = await import("postgres");
  const admin = process.env.BENCH_DATABASE_URL ?? DEFAULT_PG;
  const name = `${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const sql = postgres(admin, { max: 1, onnotice: () => {} });
  await sql.unsafe(`create database ${name}`);
  await sql.end();
  onCleanup(async () => {
    const dropper = postgres(admin, { max: 1, onnotice: () => {} });
    await dropper.unsafe(`drop database if exists ${name} with (force)`);
    await dropper.end();
  });
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A process's resident memory now and its peak so far (VmRSS and VmHWM of /proc/<pid>/status), in MiB. Linux only. */
function processMemory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const mib = (name: string) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+) kB$`, "m"))?.[1]) / 1024;
  return { rss: mib("VmRSS"), hwm: mib("VmHWM") };
}

/**
 * Watches a process's memory from now (RSS sampled every 2 ms) until the returned `stop()`, which answers
 * how far it grew meanwhile, in MiB: the sampled peak RSS and VmHWM, each above where they were at the start.
 */
export function watchMemory(pid: number): () => { rssPeak: number; hwm: number } {
  const before = processMemory(pid);
  let peak = before.rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, processMemory(pid).rss);
  }, 2);
  return () => {
    clearInterval(sampler);
    const after = processMemory(pid);
    return { rssPeak: Math.max(peak, after.rss) - before.rss, hwm: after.hwm - before.hwm };
  };
}
