// Issue #41 §5 (docs/decisions/hosting-layout.md): what a SQLite file per environment costs one process.
// Opens N stores with the real `openStore` (fresh files, migrated), then reopens them (a cold environment:
// the file exists), and writes one invoke-like claim + settlement into some of them, reading RSS, threads
// and open files from /proc/self after each step. Not part of `bun run bench`.
//
//   bun bench/layout-sqlite-files.ts [N=1000] [WRITTEN=100]
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../src/store/open.ts";
import type { ExecutionRow } from "../src/store/rows.ts";
import type { Store } from "../src/store/store.ts";

const N = Number(process.argv[2] ?? 1000);
const WRITTEN = Number(process.argv[3] ?? 100);
const dir = mkdtempSync(join(tmpdir(), "layout-sqlite-"));

function proc() {
  const status = readFileSync("/proc/self/status", "utf8");
  const field = (name: string) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+)`, "m"))?.[1]);
  return {
    rssMiB: +(field("VmRSS") / 1024).toFixed(1),
    threads: field("Threads"),
    fds: readdirSync("/proc/self/fd").length,
  };
}

function show(...parts: unknown[]) {
  console.log(parts.map((part) => (typeof part === "string" ? part : JSON.stringify(part))).join(" "));
}

function percentile(values: number[], p: number) {
  const sorted = [...values].sort((a, b) => a - b);
  return +(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0).toFixed(2);
}

function executionRow(): ExecutionRow {
  const now = Date.now();
  return {
    id: Bun.randomUUIDv7(),
    requestId: crypto.randomUUID(),
    principalKind: "service",
    principalId: "bench",
    action: "echo",
    kind: "function",
    releaseVersion: "v1",
    contractHash: "c".repeat(64),
    inputFingerprint: "f".repeat(64),
    input: { text: "hello" },
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

/** One invoke's writes: the claim and the settlement, both committed. */
async function invoke(store: Store) {
  const { row, committed } = await store.executions.claimToRun(executionRow());
  await committed;
  await store.executions.settle(row.id, {
    status: "succeeded",
    output: { text: "hello" },
    errorCode: null,
    errorMessage: null,
    finishedAt: Date.now(),
  });
}

const path = (i: number) => join(dir, `env-${i}`, "actuate.db");
Bun.gc(true);
show("baseline", proc());

// 1. Create (open + migrate a new file), kept open.
let stores: Store[] = [];
const createMs: number[] = [];
for (let i = 0; i < N; i++) {
  const started = performance.now();
  stores.push(await openStore(`sqlite:${path(i)}`));
  createMs.push(performance.now() - started);
  if ([10, 100, 1000, 5000].includes(i + 1)) {
    Bun.gc(true);
    show(`created and open: ${i + 1}`, proc(), { p50: percentile(createMs, 0.5), p99: percentile(createMs, 0.99) });
  }
}
const fileKiB = Math.round(
  readdirSync(join(dir, "env-0")).reduce((sum, name) => sum + Bun.file(join(dir, "env-0", name)).size, 0) / 1024,
);
show(`an empty environment's files: ${fileKiB} KiB`, readdirSync(join(dir, "env-0")));
for (const store of stores) await store.close();
stores = [];
Bun.gc(true);
show("all closed", proc());

// 2. Reopen (the file exists: a cold environment), kept open.
const reopenMs: number[] = [];
for (let i = 0; i < N; i++) {
  const started = performance.now();
  stores.push(await openStore(`sqlite:${path(i)}`));
  reopenMs.push(performance.now() - started);
}
Bun.gc(true);
show(`reopened: ${N}`, proc(), { p50: percentile(reopenMs, 0.5), p99: percentile(reopenMs, 0.99) });

// 3. The first invoke-like write into WRITTEN of them: each starts its checkpoint thread.
const firstWriteMs: number[] = [];
for (let i = 0; i < WRITTEN; i++) {
  const started = performance.now();
  await invoke(stores[i] as Store);
  firstWriteMs.push(performance.now() - started);
}
// The request-key writer starts with the first merge, four seconds after the first key.
await Bun.sleep(4_500);
Bun.gc(true);
show(`first write into ${WRITTEN}`, proc(), {
  p50: percentile(firstWriteMs, 0.5),
  p99: percentile(firstWriteMs, 0.99),
});
for (const store of stores) await store.close();
stores = [];

// 4. Cold environment, end to end: open an existing file and write its first invoke (no thread kept).
const coldMs: number[] = [];
for (let i = 0; i < Math.min(N, 200); i++) {
  const started = performance.now();
  const store = await openStore(`sqlite:${path(i)}`);
  await invoke(store);
  coldMs.push(performance.now() - started);
  await store.close();
}
show("cold open + first invoke write", { p50: percentile(coldMs, 0.5), p99: percentile(coldMs, 0.99) });
rmSync(dir, { recursive: true, force: true });
