// `bun bench/soak.ts`: a mixed load held for SOAK_SECONDS (default 300) against one server on SQLite and
// one on PostgreSQL, each in its own process: invokes (reads and writes), queries, execution lists and
// lookups from 16 clients, with 50 live-query subscribers refreshed by the writes. It reports, per tenth
// of the run, requests/s, p50 and p99 and the server's RSS, then RSS growth and p99 drift. Goal: RSS
// growth < 10 %, p99 stable. Env: SOAK_SECONDS, BENCH_DATABASE_URL (as bench/run.ts), SOAK_DATABASES
// (default "sqlite,postgres"), SOAK_PROBE=1 to preload bench/soak-probe.ts into the servers and print
// where their memory went (heap after a full collection, object counts that grew, the SQLite file).
import { readFileSync } from "node:fs";
import {
  cleanup,
  freePort,
  freshPgDatabase,
  LAUNCH_ENV,
  percentile,
  startProcess,
  tempDir,
  waitHealthy,
} from "./lib.ts";

const SECONDS = Number(process.env.SOAK_SECONDS ?? 300);
const CLIENTS = 16;
const SUBSCRIBERS = 50;
const WINDOWS = 10;
const DATABASES = (process.env.SOAK_DATABASES ?? "sqlite,postgres").split(",");
const PROBE = Boolean(process.env.SOAK_PROBE);
const key = `soak-${crypto.randomUUID()}`;
const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };

const rssOf = (pid: number) => {
  const match = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB$/m);
  return match?.[1] ? Number(match[1]) / 1024 : Number.NaN;
};

interface Window {
  latencies: number[];
  /** Latencies by operation, to tell which one slows down. */
  byOperation: Map<string, number[]>;
  errors: number;
  /** RSS sampled every second; a window's figure is their median (single samples swing by ±15 MiB). */
  rssSamples: number[];
  rssMiB: number;
}

const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

async function soak(label: string, databaseUrl: string): Promise<string[]> {
  const port = freePort();
  const proc = startProcess({
    name: `soak-${label}`,
    cmd: [
      "bun",
      ...(PROBE ? ["--preload", "./bench/soak-probe.ts"] : []),
      "src/cli/main.ts",
      "start",
      "--release",
      "releases/v1",
    ],
    env: {
      ...LAUNCH_ENV,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: tempDir("actuate-soak-"),
      SERVICE_KEYS: key,
      DATABASE_URL: databaseUrl,
    },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitHealthy(`${base}/healthz`, proc);

  const sockets: WebSocket[] = [];
  for (let i = 0; i < SUBSCRIBERS; i++) {
    const socket = new WebSocket(`${base.replace("http", "ws")}/session`);
    await new Promise((resolve) => {
      socket.onopen = resolve;
    });
    socket.send(JSON.stringify({ op: "init", "access-token": key }));
    socket.send(JSON.stringify({ op: "add-query", q: { notes: { $: { limit: 5 } } }, "return-type": "tree" }));
    sockets.push(socket);
  }

  const windows: Window[] = Array.from({ length: WINDOWS }, () => ({
    latencies: [],
    byOperation: new Map(),
    errors: 0,
    rssSamples: [],
    rssMiB: 0,
  }));
  const started = performance.now();
  const end = started + SECONDS * 1000;
  const windowOf = (at: number) => Math.min(WINDOWS - 1, Math.floor(((at - started) / (SECONDS * 1000)) * WINDOWS));
  const ids: string[] = [];
  const invoke = (action: string, input: unknown) =>
    fetch(`${base}/actions/${action}/invoke`, {
      method: "POST",
      headers,
      body: JSON.stringify({ requestId: crypto.randomUUID(), input }),
    });
  type Operation = [name: string, run: () => Promise<Response>];
  const operations: Operation[] = [
    ...Array<Operation>(10).fill(["math.add", () => invoke("math.add", { a: 1, b: 2 })]),
    ...Array<Operation>(3).fill(["notes.add", () => invoke("notes.add", { title: `soak ${crypto.randomUUID()}` })]),
    ...Array<Operation>(3).fill([
      "query",
      () =>
        fetch(`${base}/query?format=objects`, {
          method: "POST",
          headers,
          body: JSON.stringify({ query: { notes: { $: { limit: 20, order: { createdAt: "desc" } } } } }),
        }),
    ]),
    ...Array<Operation>(3).fill(["list", () => fetch(`${base}/executions?limit=50`, { headers })]),
    [
      "by id",
      () =>
        fetch(`${base}/executions/${ids[Math.floor(Math.random() * ids.length)] ?? crypto.randomUUID()}`, {
          headers,
        }),
    ],
  ];
  const client = async () => {
    while (performance.now() < end) {
      const [name, operation] = operations[Math.floor(Math.random() * operations.length)] as Operation;
      const at = performance.now();
      const response = await operation();
      const body = await response.text();
      const window = windows[windowOf(at)] as Window;
      const latency = performance.now() - at;
      window.latencies.push(latency);
      const named = window.byOperation.get(name) ?? [];
      named.push(latency);
      window.byOperation.set(name, named);
      if (response.status >= 400 && response.status !== 404) window.errors++;
      if (ids.length < 1000 && body.startsWith('{"kind"'))
        ids.push((JSON.parse(body) as { execution: { id: string } }).execution.id);
    }
  };
  const sampler = setInterval(() => {
    const window = windows[windowOf(performance.now())] as Window;
    window.rssSamples.push(rssOf(proc.proc.pid));
  }, 1000);
  await Promise.all(Array.from({ length: CLIENTS }, client));
  clearInterval(sampler);
  for (const socket of sockets) socket.close();
  await proc.stop();
  for (const w of windows) w.rssMiB = median(w.rssSamples);

  const rows = windows.map((w, i) => {
    const sorted = [...w.latencies].sort((a, b) => a - b);
    const rps = w.latencies.length / (SECONDS / WINDOWS);
    return `${label.padEnd(10)} ${String(i + 1).padStart(2)}/${WINDOWS}  ${rps.toFixed(0).padStart(6)} rps  p50 ${percentile(sorted, 50).toFixed(1).padStart(6)} ms  p99 ${percentile(sorted, 99).toFixed(1).padStart(7)} ms  RSS ${w.rssMiB.toFixed(0).padStart(4)} MiB  errors ${w.errors}`;
  });
  const p50s = (w: Window) =>
    [...w.byOperation.entries()].map(([name, values]) => `${name} ${median(values).toFixed(1)}`).join(", ");
  rows.push(`${label} p50 by operation, first tenth: ${p50s(windows[0] as Window)} ms`);
  rows.push(`${label} p50 by operation, last tenth:  ${p50s(windows[WINDOWS - 1] as Window)} ms`);
  if (PROBE) rows.push(...probeReport(label, readFileSync(`${proc.logPath}.err`, "utf8")));
  const first = windows[0] as Window;
  const last = windows[WINDOWS - 1] as Window;
  const middle = windows[Math.floor(WINDOWS / 2)] as Window;
  const p99 = (w: Window) =>
    percentile(
      [...w.latencies].sort((a, b) => a - b),
      99,
    );
  rows.push(
    `${label}: RSS start/middle/end ${first.rssMiB.toFixed(0)} / ${middle.rssMiB.toFixed(0)} / ${last.rssMiB.toFixed(0)} MiB ` +
      `(growth ${(((last.rssMiB - first.rssMiB) / first.rssMiB) * 100).toFixed(1)} %, goal < 10 %); ` +
      `p99 first/last tenth ${p99(first).toFixed(1)} / ${p99(last).toFixed(1)} ms`,
  );
  return rows;
}

interface ProbeLine {
  at: number;
  rss: number;
  heap: number;
  types: Record<string, number>;
  [figure: string]: unknown;
}

/** The probe's lines, and the object types whose counts grew most between the second sample and the last. */
function probeReport(label: string, log: string): string[] {
  const lines = log
    .split("\n")
    .filter((line) => line.startsWith("soak-probe "))
    .map((line) => JSON.parse(line.slice("soak-probe ".length)) as ProbeLine);
  const rows = lines.map(({ types: _, ...figures }) => `${label} probe ${JSON.stringify(figures)}`);
  const [start, end] = [lines[1] ?? lines[0], lines.at(-1)];
  if (start && end) {
    const grown = Object.entries(end.types)
      .map(([type, count]) => [type, count - (start.types[type] ?? 0)] as const)
      .sort(([, a], [, b]) => b - a)
      .slice(0, 6);
    rows.push(`${label} probe: object counts grown (of the top types) ${JSON.stringify(Object.fromEntries(grown))}`);
  }
  return rows;
}

try {
  console.log(`soak: ${SECONDS} s per database, ${CLIENTS} clients, ${SUBSCRIBERS} live subscribers`);
  if (DATABASES.includes("sqlite")) for (const line of await soak("sqlite", "")) console.log(line);
  if (DATABASES.includes("postgres"))
    for (const line of await soak("postgres", await freshPgDatabase("actuate_soak"))) console.log(line);
} finally {
  await cleanup();
}
