// `bun bench/stats-series.ts`: what GET /stats/series costs on a large table (issue #45). For each database,
// N executions (default 1,000,000, SERIES_ROWS) spread evenly over the last 24 h, 50 actions, 80 % succeeded,
// 15 % failed, 5 % canceled, durations 5 ms to 2 s, are written into a fresh database with one
// INSERT … SELECT; then `StatsReader.series` (both of its reads, as the route calls them) is timed for
// 1h/1m, 24h/15m, 24h/1h and 24h/15m of one action, median and worst of ROUNDS, beside /stats's count
// by status over 24 h on the same rows. On SQLite every read runs on the serving thread: its time is
// how long the server answers nothing else, unless the read hands the thread back: "loop stall" is the
// longest the event loop went without turning meanwhile.
// Env: SERIES_ROWS, SERIES_ROUNDS (default 7), BENCH_DATABASE_URL (as bench/run.ts).
import { Database } from "bun:sqlite";
import { join } from "node:path";
import postgres from "postgres";
import { StatsReader } from "../src/engine/stats.ts";
import { uuidV7Floor } from "../src/lib/ids.ts";
import { openStore } from "../src/store/open.ts";
import { cleanup, freshPgDatabase, median, tempDir } from "./lib.ts";

const ROWS = Number(process.env.SERIES_ROWS ?? 1_000_000);
const ROUNDS = Number(process.env.SERIES_ROUNDS ?? 7);
const DAY = 24 * 3_600_000;
const service = { kind: "service" as const, id: "bench" };

/** Row i of ROWS, created at `now - DAY + i·DAY/ROWS`: its id a UUIDv7 of that millisecond, so ids rise with i. */
function fillStatement(pg: boolean, now: number): string {
  const series = pg
    ? `generate_series(0::bigint, ${ROWS - 1}) as g(i)`
    : `(with recursive s(i) as (select 0 union all select i + 1 from s where i < ${ROWS - 1}) select i from s) as g`;
  const at = `(${now - DAY} + i * ${DAY} / ${ROWS})`;
  const hex = pg ? `lpad(to_hex(${at}), 12, '0')` : `printf('%012x', ${at})`;
  const tail = pg ? `lpad(to_hex(i), 12, '0')` : `printf('%012x', i)`;
  const status = `case when i % 20 < 16 then 'succeeded' when i % 20 < 19 then 'failed' else 'canceled' end`;
  return `insert into executions (id, request_id, principal_kind, principal_id, action, kind, release_version,
      contract_hash, input_fingerprint, input, input_bytes, status, created_at, started_at, finished_at)
    select substr(${hex}, 1, 8) || '-' || substr(${hex}, 9, 4) || '-7000-8000-' || ${tail}, 'r' || i, 'user',
      'user-' || (i % 1000), 'bench.action-' || (i % 50), 'function', 'b1', 'c', 'f', '{"text":"hello"}', 16,
      ${status}, ${at}, ${at}, ${at} + 5 + (i * 7919) % 1995
    from ${series}`;
}

async function fill(url: string, now: number): Promise<number> {
  const start = performance.now();
  if (url.startsWith("sqlite:")) {
    const db = new Database(url.slice("sqlite:".length));
    db.run(fillStatement(false, now));
    db.run("analyze");
    db.close();
  } else {
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    await sql.unsafe(fillStatement(true, now));
    await sql.unsafe("vacuum analyze executions");
    await sql.end();
  }
  return performance.now() - start;
}

/**
 * Median and worst time of `read`; the median CPU it cost this process (on SQLite the whole read, on
 * PostgreSQL the client's part: steadier than time on a shared machine); and the longest the event loop
 * went without running a 1 ms timer meanwhile: how long a request arriving then would have waited.
 */
async function timed(read: () => Promise<unknown>): Promise<string> {
  await read();
  const times: number[] = [];
  const cpu: number[] = [];
  let stall = 0;
  for (let i = 0; i < ROUNDS; i++) {
    let tick = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      stall = Math.max(stall, now - tick);
      tick = now;
    }, 1);
    const start = performance.now();
    const used = process.cpuUsage();
    await read();
    times.push(performance.now() - start);
    const { user, system } = process.cpuUsage(used);
    cpu.push((user + system) / 1000);
    clearInterval(timer);
    stall = Math.max(stall, performance.now() - tick);
  }
  const ms = (values: number[]) => median(values).toFixed(0);
  return `${ms(times)} ms (worst ${Math.max(...times).toFixed(0)}; CPU ${ms(cpu)}; stall ${stall.toFixed(0)})`;
}

async function measure(name: string, url: string): Promise<Record<string, string>> {
  const now = Date.now();
  const store = await openStore(url);
  const filled = await fill(url, now);
  console.log(`${name}: ${ROWS.toLocaleString("en")} executions over 24 h written in ${(filled / 1000).toFixed(1)} s`);
  const stats = new StatsReader({ store, liveSockets: () => 0 });
  const figures: Record<string, string> = {};
  const cases: [string, () => Promise<unknown>][] = [
    ["series 1h / 1m (60 buckets)", () => stats.series(service, 3_600_000, 60_000, null)],
    ["series 24h / 15m (96 buckets)", () => stats.series(service, DAY, 900_000, null)],
    ["series 24h / 1h (24 buckets)", () => stats.series(service, DAY, 3_600_000, null)],
    ["series 24h / 1m (1,440 buckets)", () => stats.series(service, DAY, 60_000, null)],
    ["series 24h / 15m, one action of 50", () => stats.series(service, DAY, 900_000, "bench.action-7")],
    ["series 1h / 1m, one action of 50", () => stats.series(service, 3_600_000, 60_000, "bench.action-7")],
    ["/stats by status, 24 h (for scale)", () => store.stats.executionsByStatus(uuidV7Floor(now - DAY))],
  ];
  for (const [label, read] of cases) {
    figures[label] = await timed(read);
    console.log(`  ${label.padEnd(40)} ${figures[label]}`);
  }
  await store.close();
  return figures;
}

try {
  const sqlite = await measure("SQLite", `sqlite:${join(tempDir("actuate-series-"), "bench.db")}`);
  const pg = await measure("PostgreSQL", await freshPgDatabase("actuate_series"));
  console.log("\n| read | SQLite | PostgreSQL |\n|---|---|---|");
  for (const label of Object.keys(sqlite)) console.log(`| ${label} | ${sqlite[label]} | ${pg[label]} |`);
} finally {
  await cleanup();
}
