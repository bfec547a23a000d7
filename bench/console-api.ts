// `bun bench/console-api.ts`: what the console's reads cost on a large table (issue #19). For each
// database, N executions (default 200,000, CONSOLE_ROWS) spread over the last 48 h are written straight
// into a fresh database (5 % of them one user's), then each read the console makes is timed through the
// store (median and worst of 25): GET /stats's counts and failing actions over 1 h and 24 h, a page of
// /executions since 5 min (service key) and since 1 h (the user), and a page of a user's files among FILES
// others.
// Env: CONSOLE_ROWS, BENCH_DATABASE_URL (as bench/run.ts).
import { Database } from "bun:sqlite";
import { join } from "node:path";
import postgres from "postgres";
import { uuidV7Floor } from "../src/lib/ids.ts";
import { openStore } from "../src/store/open.ts";
import { cleanup, freshPgDatabase, median, tempDir } from "./lib.ts";

const ROWS = Number(process.env.CONSOLE_ROWS ?? 200_000);
const FILES = 20_000;
const HOUR = 3_600_000;
const STATUSES = ["succeeded", "succeeded", "succeeded", "failed", "canceled"];

function executionRows(now: number) {
  const rows = [];
  for (let i = 0; i < ROWS; i++) {
    const at = now - Math.floor((i / ROWS) * 48 * HOUR);
    rows.push({
      id: Bun.randomUUIDv7("hex", at),
      request_id: crypto.randomUUID(),
      principal_kind: "user",
      principal_id: i % 20 === 0 ? "alice" : `user-${i % 1000}`,
      // 50 actions, so "failing actions" has groups to rank.
      action: `bench.action-${i % 50}`,
      kind: "function",
      release_version: "b1",
      contract_hash: "c".repeat(64),
      input_fingerprint: "f".repeat(64),
      input: '{"text":"hello"}',
      input_bytes: 16,
      status: STATUSES[i % STATUSES.length] as string,
      created_at: at,
      started_at: at,
      finished_at: at,
    });
  }
  return rows;
}

function fileRows(now: number) {
  return Array.from({ length: FILES }, (_, i) => ({
    path: `files/${String(i).padStart(6, "0")}.txt`,
    content_type: "text/plain",
    size: 1,
    sha256: "0".repeat(64),
    owner_kind: "user",
    owner_id: i % 100 === 0 ? "alice" : `user-${i % 1000}`,
    created_at: now,
    updated_at: now,
  }));
}

async function fill(url: string, now: number) {
  const executions = executionRows(now);
  const files = fileRows(now);
  if (url.startsWith("sqlite:")) {
    const db = new Database(url.slice("sqlite:".length));
    for (const [table, rows] of [
      ["executions", executions],
      ["files", files],
    ] as const) {
      const columns = Object.keys(rows[0] as object);
      const insert = db.prepare(
        `insert into ${table} (${columns.join(", ")}) values (${columns.map((c) => `$${c}`).join(", ")})`,
      );
      db.transaction(() => {
        for (const row of rows as Record<string, string | number>[]) {
          insert.run(Object.fromEntries(Object.entries(row).map(([k, v]) => [`$${k}`, v])));
        }
      })();
    }
    db.exec("analyze");
    db.close();
    return;
  }
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  // A statement takes at most 65,534 parameters.
  for (let i = 0; i < executions.length; i += 4_000) {
    await sql`insert into executions ${sql(executions.slice(i, i + 4_000).map((r) => ({ ...r, input: JSON.parse(r.input) })))}`;
  }
  for (let i = 0; i < files.length; i += 4_000) await sql`insert into files ${sql(files.slice(i, i + 4_000))}`;
  await sql`analyze`;
  await sql.end();
}

async function timed(read: () => Promise<unknown>) {
  const times: number[] = [];
  for (let i = 0; i < 25; i++) {
    const start = performance.now();
    await read();
    times.push(performance.now() - start);
  }
  return `${median(times).toFixed(2)} ms (worst ${Math.max(...times).toFixed(2)})`;
}

async function measure(name: string, url: string) {
  const now = Date.now();
  const store = await openStore(url);
  await fill(url, now);
  const alice = { kind: "user" as const, id: "alice" };
  const page = { limit: 51, maxValueBytes: 4096 };
  console.log(`\n${name}: ${ROWS} executions over 48 h, ${FILES} files`);
  console.log(
    `  stats, 1 h window:               ${await timed(() => store.stats.executionsByStatus(uuidV7Floor(now - HOUR)))}`,
  );
  console.log(
    `  stats, 24 h window:              ${await timed(() => store.stats.executionsByStatus(uuidV7Floor(now - 24 * HOUR)))}`,
  );
  console.log(
    `  failing actions, 1 h window:     ${await timed(() => store.stats.failingActions(uuidV7Floor(now - HOUR), 10))}`,
  );
  console.log(
    `  failing actions, 24 h window:    ${await timed(() => store.stats.failingActions(uuidV7Floor(now - 24 * HOUR), 10))}`,
  );
  console.log(`  active runs (partial index):     ${await timed(() => store.runs.countActive())}`);
  console.log(
    `  /executions since 5 min (key):   ${await timed(() => store.executions.list({ ...page, sinceId: uuidV7Floor(now - 300_000) }))}`,
  );
  console.log(
    `  /executions since 1 h (user):    ${await timed(() => store.executions.list({ ...page, principal: alice, sinceId: uuidV7Floor(now - HOUR) }))}`,
  );
  console.log(
    `  /executions 24-25 h ago (user):  ${await timed(() => store.executions.list({ ...page, principal: alice, sinceId: uuidV7Floor(now - 25 * HOUR), beforeId: uuidV7Floor(now - 24 * HOUR) }))}`,
  );
  // The console's live list reads its newest page again every 2 s, with whatever filters the person set.
  console.log(`  live list, newest page (key):    ${await timed(() => store.executions.list({ ...page }))}`);
  console.log(
    `  live list, status=failed (key):  ${await timed(() => store.executions.list({ ...page, status: "failed" }))}`,
  );
  console.log(
    `  live list, caller=alice (key):   ${await timed(() => store.executions.list({ ...page, principal: alice }))}`,
  );
  console.log(
    `  live list, an action none ran:   ${await timed(() => store.executions.list({ ...page, action: "bench.none" }))}`,
  );
  console.log(
    `  the same, since 1 h:             ${await timed(() => store.executions.list({ ...page, action: "bench.none", sinceId: uuidV7Floor(now - HOUR) }))}`,
  );
  console.log(
    `  /storage/files, a user's page:   ${await timed(() => store.files.list({ owner: alice, prefix: "files/", limit: 51 }))}`,
  );
  console.log(
    `  /storage/files, key, prefix:     ${await timed(() => store.files.list({ prefix: "files/0150", limit: 51 }))}`,
  );
  await store.close();
}

try {
  await measure("SQLite", `sqlite:${join(tempDir("actuate-console-"), "bench.db")}`);
  await measure("PostgreSQL", await freshPgDatabase("actuate_console"));
} finally {
  await cleanup();
}
