// The CPU an invoke costs inside the server, without HTTP (issue #14's per-request budget): a server
// started in this process on a fresh SQLite database with releases/v1, then `engine.invoke` of math.add,
// 32 at a time, new request ids. Prints CPU per invoke (this process: the engine, the store, the group
// commit) and invokes per second. MODE=http sends the same through fetch to the server instead (the
// client's CPU is then counted too). N = invokes measured (default 40 000, after 5 000 of warm-up).
// DATABASE_URL=postgres://… runs it on that database instead (an empty one: the release is published
// there); the CPU printed is then this process's only, not the database's.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config.ts";
import { bundlesDir, servingSingle, startServer } from "../src/main.ts";
import { publishRelease } from "../src/release/publish.ts";
import { openStore } from "../src/store/open.ts";

const N = Number(process.env.N ?? 40_000);
const MODE = process.env.MODE === "http" ? "http" : "engine";
const CONCURRENCY = 32;

const dataDir = mkdtempSync(join(tmpdir(), "actuate-invoke-engine-"));
const config = loadConfig({
  PORT: "0",
  HOST: "127.0.0.1",
  DATA_DIR: dataDir,
  SERVICE_KEYS: "bench-key",
  DATABASE_URL: process.env.DATABASE_URL ?? "",
});
const store = await openStore(config.databaseUrl);
await publishRelease({ store, bundlesDir: bundlesDir(config), dir: "releases/v1", whenTaken: "refuse" });
const server = servingSingle(await startServer(config, { store, log: () => {} }));
const principal = { kind: "service" as const, id: "bench-key" };

async function invoke(): Promise<void> {
  const requestId = crypto.randomUUID();
  if (MODE === "engine") {
    await server.engine.invoke({ principal, action: "math.add", requestId, input: { a: 1, b: 2 } });
    return;
  }
  const res = await fetch(`${server.url}/actions/math.add/invoke`, {
    method: "POST",
    headers: { authorization: "Bearer bench-key", "content-type": "application/json" },
    body: JSON.stringify({ requestId, input: { a: 1, b: 2 } }),
  });
  if (res.status !== 200) throw new Error(`invoke answered ${res.status}`);
  await res.arrayBuffer();
}

async function run(count: number): Promise<void> {
  let left = count;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) await invoke();
    }),
  );
}

try {
  await run(5_000);
  const cpu = process.cpuUsage();
  const started = performance.now();
  await run(N);
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `${MODE}: ${((used.user + used.system) / N).toFixed(1)} µs CPU per invoke, ${(N / seconds).toFixed(0)} invokes/s`,
  );
} finally {
  await server.stop();
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
}
