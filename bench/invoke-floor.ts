// The durable-write floor for bench/run.ts (issue #14): the least a Bun server can do to answer an
// invocation durably. Bun.serve reads the JSON body, queues one row (a UUIDv7 primary key, the request
// id and the body as JSON: what an execution record needs at least), and answers once the row is
// committed; rows queued in the same event-loop turn share one transaction (group commit). No
// idempotency index, no auth, no validation: what is left of an invoke when everything but the durable
// write is taken away.
// - SQLite (default): bun:sqlite on the server's pragmas (WAL, synchronous=NORMAL), in DATA_DIR.
// - PostgreSQL (DATABASE_URL=postgres://…): postgres.js, a turn's rows in one INSERT from a JSON array,
//   one batch in flight while the next gathers, committed with the server's defaults
//   (synchronous_commit=on): the shape of the server's own write lanes (store/pg/lane.ts), one write
//   per request where an invoke makes two (its claim, then its settlement).
import { Database } from "bun:sqlite";
import { join } from "node:path";
import postgres from "postgres";
import { PG_FLOOR_INSERT, PG_FLOOR_TABLE } from "./floor-table.ts";

interface Row {
  id: string;
  requestId: string;
  input: unknown;
}

interface Pending {
  row: Row;
  done: () => void;
  fail: (error: unknown) => void;
}

/** Commits a batch of rows in one transaction. */
type CommitBatch = (rows: Row[]) => Promise<void> | void;

function sqliteFloor(): CommitBatch {
  const db = new Database(join(process.env.DATA_DIR ?? ".", "floor.sqlite"), { create: true, strict: true });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA cache_size = -65536");
  db.exec("CREATE TABLE IF NOT EXISTS executions (id TEXT PRIMARY KEY, request_id TEXT NOT NULL, input TEXT NOT NULL)");
  const insert = db.prepare("INSERT INTO executions (id, request_id, input) VALUES (?, ?, ?)");
  const begin = db.prepare("BEGIN");
  const commit = db.prepare("COMMIT");
  return (rows) => {
    begin.run();
    for (const row of rows) insert.run(row.id, row.requestId, JSON.stringify(row.input));
    commit.run();
  };
}

async function postgresFloor(url: string): Promise<CommitBatch> {
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  await sql.unsafe(PG_FLOOR_TABLE);
  return async (rows) => {
    await sql.unsafe(PG_FLOOR_INSERT, [JSON.stringify(rows)], { prepare: true });
  };
}

const databaseUrl = process.env.DATABASE_URL ?? "";
const commitBatch = databaseUrl.startsWith("postgres") ? await postgresFloor(databaseUrl) : sqliteFloor();

let queue: Pending[] = [];
let scheduled = false;
let inFlight = false;

/** Commits what is queued, one batch at a time; what arrives meanwhile waits for the next one. */
async function flush(): Promise<void> {
  scheduled = false;
  if (inFlight || queue.length === 0) return;
  inFlight = true;
  const batch = queue;
  queue = [];
  try {
    await commitBatch(batch.map((p) => p.row));
    for (const p of batch) p.done();
  } catch (error) {
    for (const p of batch) p.fail(error);
  }
  inFlight = false;
  if (queue.length > 0) schedule();
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(flush);
}

function write(row: Row): Promise<void> {
  return new Promise((done, fail) => {
    queue.push({ row, done, fail });
    schedule();
  });
}

const server = Bun.serve({
  port: Number(process.env.PORT ?? 0),
  hostname: process.env.HOST ?? "127.0.0.1",
  async fetch(req) {
    const url = new URL(req.url);
    if (url.pathname === "/healthz") return Response.json({ ok: true });
    const body = (await req.json()) as { requestId: string; input: unknown };
    const id = Bun.randomUUIDv7();
    await write({ id, requestId: body.requestId, input: body.input });
    return Response.json({ ok: true, execution: { id, status: "succeeded", output: body.input } });
  },
});

console.log(`invoke floor (${databaseUrl.startsWith("postgres") ? "postgres" : "sqlite"}) serving ${server.url}`);
