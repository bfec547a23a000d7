// `bun bench/large-values.ts`: how much memory the server takes to answer one large value whole
// (issue #13: values are built as one JSON string, not streamed). For each database and each by-id
// endpoint, a fresh server process stores one execution (or run) of LARGE_MIB MiB — made by the action
// itself, so no request carries it in — then the endpoint is called (once, then CONCURRENCY at once)
// and the server's peak RSS (VmHWM, and VmRSS sampled every 2 ms) is compared with before the call.
// Env: LARGE_MIB (default 16), BENCH_DATABASE_URL (as bench/run.ts).
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

const MIB = Number(process.env.LARGE_MIB ?? 16);
// The run is 3 steps and an output of a quarter each, whole MiB (large.steps takes an integer): a smaller
// LARGE_MIB would be refused and the wait for the run would never end.
if (!Number.isInteger(MIB / 4) || MIB < 4) throw new Error(`LARGE_MIB must be a multiple of 4, got ${MIB}`);
const CONCURRENCY = 4;
const key = `large-${crypto.randomUUID()}`;
const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
const MiB = 1024 * 1024;

type Scenario = "execution" | "result" | "run";

async function measure(scenario: Scenario, databaseUrl: string) {
  const port = freePort();
  const proc = startProcess({
    name: `large-${scenario}`,
    cmd: ["bun", "src/cli/main.ts", "start", "--release", join(BENCH_DIR, "fixtures", "large")],
    env: {
      ...LAUNCH_ENV,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: tempDir("actuate-large-"),
      SERVICE_KEYS: key,
      DATABASE_URL: databaseUrl,
      WAIT_MS: "50",
      // Outputs past the default 8 MiB would fail: this measures answers as large as LARGE_MIB.
      MAX_OUTPUT_BYTES: String((MIB + 1) * MiB),
    },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitHealthy(`${base}/healthz`, proc);
  try {
    const post = (path: string, input: unknown) =>
      fetch(`${base}${path}`, {
        method: "POST",
        headers,
        body: JSON.stringify({ requestId: crypto.randomUUID(), input }),
      });
    let path: string;
    if (scenario === "run") {
      const { runId } = (await (await post("/actions/large.steps/invoke", { mib: MIB / 4, steps: 3 })).json()) as {
        runId: string;
      };
      path = `/runs/${runId}`;
      // The list is bounded, so polling it reads no value.
      while (
        ((await (await fetch(`${base}/runs?limit=1`, { headers })).json()) as { items: { status: string }[] }).items[0]
          ?.status !== "succeeded"
      )
        await Bun.sleep(100);
    } else {
      const answer = (await (await post("/actions/large.value/invoke", { mib: MIB, delayMs: 300 })).json()) as {
        execution: { id: string };
      };
      path = scenario === "result" ? `/executions/${answer.execution.id}/result` : `/executions/${answer.execution.id}`;
      while (
        ((await (await fetch(`${base}/executions?limit=1`, { headers })).json()) as { items: { status: string }[] })
          .items[0]?.status !== "succeeded"
      )
        await Bun.sleep(100);
    }
    await Bun.sleep(1000);
    const pid = proc.proc.pid;
    const call = async (n: number) => {
      const stop = watchMemory(pid);
      const started = performance.now();
      const sizes = await Promise.all(
        Array.from({ length: n }, async () => {
          const response = await fetch(`${base}${path}`, { headers });
          if (response.status !== 200) throw new Error(`${path}: ${response.status}`);
          return (await response.arrayBuffer()).byteLength;
        }),
      );
      const ms = performance.now() - started;
      return { n, bytes: sizes[0] as number, ms, ...stop() };
    };
    return [await call(1), await call(CONCURRENCY)];
  } finally {
    await proc.stop();
  }
}

try {
  console.log(`large values: ${MIB} MiB per execution (a run: 3 steps and an output of ${MIB / 4} MiB)`);
  for (const [label, url] of [
    ["sqlite", ""],
    ["postgres", await freshPgDatabase("actuate_large")],
  ] as const) {
    for (const scenario of ["execution", "result", "run"] as const) {
      for (const m of await measure(scenario, url)) {
        console.log(
          `${label.padEnd(9)} ${scenario.padEnd(9)} ×${m.n}  answer ${(m.bytes / MiB).toFixed(1)} MiB  ${m.ms.toFixed(0).padStart(5)} ms  ` +
            `peak RSS +${m.rssPeak.toFixed(0)} MiB (sampled), VmHWM +${m.hwm.toFixed(0)} MiB  (${(m.rssPeak / ((m.bytes * m.n) / MiB)).toFixed(1)}× the bytes answered)`,
        );
      }
    }
  }
} finally {
  await cleanup();
}
