// The durable-write floor for bench/run.ts (issue #14): the least a Bun server can do to answer an
// invocation durably on SQLite. Bun.serve reads the JSON body, queues one row (a UUIDv7 primary key,
// the request id and the body as JSON: what an execution record needs at least), and answers once the
// row is committed; rows queued in the same event-loop turn share one transaction (group commit), on
// the same pragmas as the server's database (WAL, synchronous=NORMAL). No idempotency index, no auth,
// no validation: what is left of an invoke when everything but the durable write is taken away.
import { Database } from "bun:sqlite";
import { join } from "node:path";

const dir = process.env.DATA_DIR ?? ".";
const db = new Database(join(dir, "floor.sqlite"), { create: true, strict: true });
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA synchronous = NORMAL");
db.exec("PRAGMA cache_size = -65536");
db.exec("CREATE TABLE IF NOT EXISTS executions (id TEXT PRIMARY KEY, request_id TEXT NOT NULL, input TEXT NOT NULL)");
const insert = db.prepare("INSERT INTO executions (id, request_id, input) VALUES (?, ?, ?)");
const begin = db.prepare("BEGIN");
const commit = db.prepare("COMMIT");

interface Pending {
  row: [string, string, string];
  done: () => void;
}
let queue: Pending[] = [];
let scheduled = false;

function flush(): void {
  scheduled = false;
  const batch = queue;
  queue = [];
  begin.run();
  for (const p of batch) insert.run(...p.row);
  commit.run();
  for (const p of batch) p.done();
}

function write(row: [string, string, string]): Promise<void> {
  return new Promise((done) => {
    queue.push({ row, done });
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
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
    await write([id, body.requestId, JSON.stringify(body.input)]);
    return Response.json({ ok: true, execution: { id, status: "succeeded", output: body.input } });
  },
});

console.log(`invoke floor serving ${server.url}`);
