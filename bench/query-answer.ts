// `bun bench/query-answer.ts`: what one large POST /query answer costs the server (issue #46 item 6: a
// 210 MB answer peaked at 0.95-1.3 GiB RSS and stalled /healthz for seconds). For each database a fresh
// server stores TOTAL_MIB MiB of entities (BLOB_KIB KiB each, written by an action), then one query reads
// them all (in both formats, then CONCURRENCY at once), while /healthz is asked every 20 ms. Printed: the
// answer (status, bytes), the server's peak RSS over the call (sampled every 2 ms, and VmHWM) and the
// longest /healthz wait meanwhile. Env: TOTAL_MIB (default 200), BLOB_KIB (default 32), SERVER_ENV
// (extra server variables, `A=1,B=2`), BENCH_DATABASE_URL (as bench/run.ts).
import { join } from "node:path";
import {
  BENCH_DIR,
  cleanup,
  freePort,
  freshPgDatabase,
  LAUNCH_ENV,
  startProcess,
  tempDir,
  waitHealthy,
  watchMemory,
} from "./lib.ts";

const TOTAL_MIB = Number(process.env.TOTAL_MIB ?? 200);
const BLOB_KIB = Number(process.env.BLOB_KIB ?? 32);
const CONCURRENCY = 4;
const SERVER_ENV = Object.fromEntries(
  (process.env.SERVER_ENV ?? "")
    .split(",")
    .filter(Boolean)
    .map((pair) => pair.split("=") as [string, string]),
);
const key = `query-${crypto.randomUUID()}`;
const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
const MiB = 1024 * 1024;

async function measure(databaseUrl: string) {
  const port = freePort();
  const proc = startProcess({
    name: "query-answer",
    cmd: ["bun", "src/cli/main.ts", "start", "--release", join(BENCH_DIR, "fixtures", "large")],
    env: {
      ...LAUNCH_ENV,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: tempDir("actuate-query-"),
      SERVICE_KEYS: key,
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: "warn",
      ...SERVER_ENV,
    },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitHealthy(`${base}/healthz`, proc);
  try {
    const blobs = Math.ceil((TOTAL_MIB * 1024) / BLOB_KIB);
    const perCall = Math.max(1, Math.floor((8 * 1024) / BLOB_KIB));
    for (let made = 0; made < blobs; made += perCall) {
      const response = await fetch(`${base}/actions/large.fill/invoke`, {
        method: "POST",
        headers,
        body: JSON.stringify({
          requestId: crypto.randomUUID(),
          input: { count: Math.min(perCall, blobs - made), kib: BLOB_KIB },
        }),
      });
      const body = (await response.json()) as { execution?: { status: string } };
      if (body.execution?.status !== "succeeded") throw new Error(`fill: ${JSON.stringify(body).slice(0, 300)}`);
    }
    await Bun.sleep(1000);
    const pid = proc.proc.pid;
    const call = async (n: number, format: "triples" | "objects") => {
      const stop = watchMemory(pid);
      let done = false;
      let longestHealthz = 0;
      const healthz = (async () => {
        while (!done) {
          const asked = performance.now();
          await (await fetch(`${base}/healthz`)).arrayBuffer();
          longestHealthz = Math.max(longestHealthz, performance.now() - asked);
          await Bun.sleep(20);
        }
      })();
      const started = performance.now();
      const answers = await Promise.all(
        Array.from({ length: n }, async () => {
          const response = await fetch(`${base}/query${format === "objects" ? "?format=objects" : ""}`, {
            method: "POST",
            headers,
            body: JSON.stringify({ query: { blobs: {} } }),
          });
          const bytes = (await response.arrayBuffer()).byteLength;
          return { status: response.status, bytes };
        }),
      );
      const ms = performance.now() - started;
      done = true;
      await healthz;
      return {
        n,
        format,
        status: answers[0]?.status,
        bytes: answers[0]?.bytes ?? 0,
        ms,
        ...stop(),
        longestHealthz,
      };
    };
    return [await call(1, "triples"), await call(1, "objects"), await call(CONCURRENCY, "triples")];
  } finally {
    await proc.stop();
  }
}

try {
  console.log(`query answers: ${TOTAL_MIB} MiB of entities of ${BLOB_KIB} KiB, read by one query { blobs: {} }`);
  for (const [label, url] of [
    ["sqlite", ""],
    ["postgres", await freshPgDatabase("actuate_query")],
  ] as const) {
    for (const m of await measure(url)) {
      console.log(
        `${label.padEnd(9)} ${m.format.padEnd(8)} ×${m.n}  ${m.status}  answer ${(m.bytes / MiB).toFixed(1)} MiB  ${m.ms.toFixed(0).padStart(5)} ms  ` +
          `peak RSS +${m.rssPeak.toFixed(0)} MiB (sampled), VmHWM +${m.hwm.toFixed(0)} MiB  longest /healthz ${m.longestHealthz.toFixed(0)} ms`,
      );
    }
  }
} finally {
  await cleanup();
}
