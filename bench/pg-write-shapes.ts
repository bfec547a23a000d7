// What an invoke's writes cost PostgreSQL, by the shape of the writes (issue #14): 32 callers in this
// process, each writing one fast execution after another, no HTTP. Per shape, on a fresh database:
// invokes/s, this process's CPU per invoke (postgres.js and the batching) and the database's (every
// process under the postmaster: the backends, and the WAL writer, checkpointer and autovacuum, which
// work for these writes too). Rounds alternate the shapes (the machine is noisy); medians are printed.
// - store: today's path, PgExecutionStore: the claim (INSERT … ON CONFLICT DO NOTHING, committed before
//   the handler would run), then the settlement (UPDATE), each batched with its neighbours.
// - hot settle: the store's path on a table whose settlement can be a HOT update (no new index entries):
//   fillfactor 45 (room on the page for the settled row) and without the two indexes on columns the
//   settlement changes (executions_running_instance_idx's predicate is `status`, executions_finished_idx
//   is on `finished_at`); `instance` indexed plainly instead. What the keepAlive sweep and retention would
//   then have to do without them is not measured here.
// - locked insert: one transaction a batch: advisory locks on the batch's keys, then the settled rows
//   inserted by the store's own claim statement, one commit: a claim by lock, one write per fast invoke. The
//   lookup of keys already taken, which such a design needs before a handler runs, is left out, so
//   this is its lower bound.
// - floor: the durable-write floor's row (bench/invoke-floor.ts): id, request id, input.
// Env: BENCH_DATABASE_URL (a server to create throwaway databases on), N (invokes measured a shape and
// round, default 20 000), ROUNDS (default 3).
import postgres, { type Sql } from "postgres";
import { openStore } from "../src/store/open.ts";
import { INSERT_CLAIMS } from "../src/store/pg/executions.ts";
import type { ExecutionRow } from "../src/store/rows.ts";
import type { Store } from "../src/store/store.ts";
import { row } from "../test/support/rows.ts";
import { postgresCpuMs, postmasterOf } from "./cpu.ts";
import { PG_FLOOR_INSERT, PG_FLOOR_TABLE } from "./floor-table.ts";
import { cleanup, freshPgDatabase, median } from "./lib.ts";

const N = Number(process.env.N ?? 20_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const WARMUP = 3_000;
const CALLERS = 32;
/** Batches in flight at once: today's store has two lanes (claims, settlements), one batch each. */
const IN_FLIGHT = 2;
const PRINCIPAL = "service-bench";

const LOCK_KEYS = "select pg_advisory_xact_lock(k) from (select unnest($1::bigint[]) as k order by 1) as keys";

type Shape = "store" | "hot settle" | "locked insert" | "floor";
const SHAPES: Shape[] = ["store", "hot settle", "locked insert", "floor"];

const HOT_SETTLE_TABLE = `alter table executions set (fillfactor = 45);
  drop index executions_running_instance_idx; drop index executions_finished_idx;
  create index executions_instance_idx on executions (instance)`;

const execution = () =>
  row({ principalKind: "service", principalId: PRINCIPAL, action: "math.add", input: { a: 1, b: 2 } });

const settled = (row: ExecutionRow): ExecutionRow => ({
  ...row,
  status: "succeeded",
  output: { sum: 3 },
  finishedAt: Date.now(),
});

/** A settled row as INSERT_CLAIMS takes it: in environment 1, with the sizes of its values beside them. */
const sized = (row: ExecutionRow) => ({
  environment: 1,
  ...row,
  inputBytes: Buffer.byteLength(JSON.stringify(row.input)),
  outputBytes: Buffer.byteLength(JSON.stringify(row.output)),
});

/** Rows queued in one turn go out together, at most IN_FLIGHT batches at once (as the store's lanes do). */
function batching(write: (rows: ExecutionRow[]) => Promise<void>): () => Promise<void> {
  let queue: { row: ExecutionRow; done: () => void; fail: (error: unknown) => void }[] = [];
  let inFlight = 0;
  let scheduled = false;
  const next = () => {
    while (inFlight < IN_FLIGHT && queue.length > 0) {
      const batch = queue;
      queue = [];
      inFlight++;
      write(batch.map((item) => item.row))
        .then(
          () => {
            for (const item of batch) item.done();
          },
          (error) => {
            for (const item of batch) item.fail(error);
          },
        )
        .finally(() => {
          inFlight--;
          next();
        });
    }
  };
  return () =>
    new Promise<void>((done, fail) => {
      queue.push({ row: execution(), done, fail });
      if (scheduled) return;
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        next();
      });
    });
}

function invoker(shape: Shape, store: Store, sql: Sql): () => Promise<void> {
  const prepare = { prepare: true };
  if (shape === "store" || shape === "hot settle") {
    return async () => {
      const claimed = execution();
      const claim = await store.executions.claim(claimed);
      if (!claim.created) throw new Error("a fresh request id was taken");
      await store.executions.settle(claimed.id, {
        status: "succeeded",
        output: { sum: 3 },
        errorCode: null,
        errorMessage: null,
        finishedAt: Date.now(),
      });
    };
  }
  if (shape === "floor") {
    return batching(async (rows) => {
      const json = JSON.stringify(rows.map(({ id, requestId, input }) => ({ id, requestId, input })));
      await sql.unsafe(PG_FLOOR_INSERT, [json], prepare);
    });
  }
  return batching(async (rows) => {
    const keys = rows.map((r) => BigInt.asIntN(64, BigInt(Bun.hash(`${r.principalId}\u0000${r.requestId}`))));
    await sql.begin(async (tx) => {
      await tx.unsafe(LOCK_KEYS, [`{${keys.join(",")}}`], prepare);
      await tx.unsafe(INSERT_CLAIMS, [JSON.stringify(rows.map((r) => sized(settled(r)))), "bench"], prepare);
    });
  });
}

type Result = { rate: number; client: number; database: number; hot: number };

/** The share of the executions' updates that were HOT, as far as the statistics collector has been told. */
async function hotShare(sql: Sql): Promise<number> {
  const [counts] = await sql<{ updates: string; hot: string }[]>`
    select n_tup_upd as updates, n_tup_hot_upd as hot from pg_stat_user_tables where relname = 'executions'`;
  return Number(counts?.updates) > 0 ? Number(counts?.hot) / Number(counts?.updates) : 0;
}

async function measure(shape: Shape): Promise<Result> {
  const url = await freshPgDatabase("actuate_bench_shapes");
  const store = await openStore(url);
  // force_custom_plan as the store's own pool sets it (store/pg/open.ts).
  const sql = postgres(url, {
    max: 4,
    onnotice: () => {},
    connection: { plan_cache_mode: "force_custom_plan" },
  });
  try {
    await sql.unsafe(PG_FLOOR_TABLE);
    if (shape === "hot settle") await sql.unsafe(HOT_SETTLE_TABLE);
    const invoke = invoker(shape, store, sql);
    const run = async (count: number) => {
      let left = count;
      await Promise.all(
        Array.from({ length: CALLERS }, async () => {
          while (left-- > 0) await invoke();
        }),
      );
    };
    const postmaster = await postmasterOf(sql);
    if (postmaster === null) throw new Error("the database's CPU is read from /proc: run this next to PostgreSQL");
    await run(WARMUP);
    const databaseBefore = postgresCpuMs(postmaster) ?? 0;
    const clientBefore = process.cpuUsage();
    const started = performance.now();
    await run(N);
    const seconds = (performance.now() - started) / 1000;
    const client = process.cpuUsage(clientBefore);
    const databaseMs = (postgresCpuMs(postmaster) ?? 0) - databaseBefore;
    return {
      rate: N / seconds,
      client: (client.user + client.system) / N,
      database: (databaseMs * 1000) / N,
      hot: await hotShare(sql),
    };
  } finally {
    await sql.end();
    await store.close();
  }
}

const results = new Map<Shape, Result[]>(SHAPES.map((s) => [s, []]));
for (let round = 1; round <= ROUNDS; round++) {
  for (const shape of SHAPES) {
    const result = await measure(shape);
    results.get(shape)?.push(result);
    console.log(
      `  round ${round}  ${shape.padEnd(14)} ${result.rate.toFixed(0).padStart(6)} invokes/s  client ${result.client.toFixed(1)} µs  database ${result.database.toFixed(1)} µs  HOT updates ${(result.hot * 100).toFixed(0)} %`,
    );
  }
}
console.log(
  `\nshape            invokes/s   client µs/invoke   database µs/invoke   (medians of ${ROUNDS}, ${N} invokes each)`,
);
for (const [shape, rounds] of results) {
  const rate = median(rounds.map((r) => r.rate)).toFixed(0);
  const client = median(rounds.map((r) => r.client)).toFixed(1);
  const database = median(rounds.map((r) => r.database)).toFixed(1);
  console.log(`${shape.padEnd(16)} ${rate.padStart(9)}   ${client.padStart(16)}   ${database.padStart(18)}`);
}
await cleanup();
