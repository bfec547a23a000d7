// What a merge of request keys costs as the index grows (issue #14): batches of random keys (the
// server's MERGE_AT, or BATCH=<keys>) read from an executions table by rowid, sorted and written into the
// request-key file the way the writer thread does (store/sqlite/request-keys/file.ts), CPU per key
// merged at each size (the executions' own inserts not counted), with the generations (GENERATION_KEYS a tree) and, GENERATION=0, in one
// tree. In one tree the cost grows with the index, because a batch dirties nearly one page per key once
// the tree has more pages than the batch has keys (docs/decisions/idempotency.md).
// SIZES=50000,300000 picks the sizes (default up to two million keys); CACHE_KIB the page cache (default
// 2000, SQLite's own, which the writer thread keeps; 65536 costs the same within the noise).
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequestKeyTables, GENERATION_KEYS, RequestKeyWriter } from "../src/store/sqlite/request-keys/file.ts";
import { MERGE_AT } from "../src/store/sqlite/request-keys/index.ts";

const SIZES = (process.env.SIZES ?? "50000,150000,300000,600000,1000000,2000000").split(",").map(Number);
const GENERATION = process.env.GENERATION === "0" ? Number.MAX_SAFE_INTEGER : GENERATION_KEYS;
const BATCH = Number(process.env.BATCH ?? MERGE_AT);
const CACHE_KIB = Number(process.env.CACHE_KIB ?? 2000);

const dir = mkdtempSync(join(tmpdir(), "actuate-key-merge-"));
const db = new Database(join(dir, "keys.db"), { create: true, strict: true });
db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -${CACHE_KIB}`);
createRequestKeyTables(db, "main");
db.exec(
  "create table executions (id text primary key, principal_kind text, principal_id text, request_id text, input text)",
);
const insert = db.prepare(
  "insert into executions (id, principal_kind, principal_id, request_id, input) values (?1, 'service', 'service-bench', ?2, '{}')",
);
const writer = new RequestKeyWriter(db, { keys: "main", executions: "main" }, GENERATION);

let total = 0;
try {
  for (const size of SIZES) {
    let used = 0;
    const from = total;
    while (total < size) {
      const rowids = db.transaction(() =>
        Array.from({ length: BATCH }, () =>
          Number(insert.run(Bun.randomUUIDv7(), crypto.randomUUID()).lastInsertRowid),
        ),
      )();
      const before = process.cpuUsage();
      writer.write({
        kind: "merge",
        rows: [rowids[0] as number, rowids.at(-1) as number],
        through: Bun.randomUUIDv7(),
      });
      const merged = process.cpuUsage(before);
      used += merged.user + merged.system;
      total += BATCH;
    }
    const tree = GENERATION === GENERATION_KEYS ? `generations of ${GENERATION_KEYS}` : "one tree";
    console.log(`${size} keys (${tree}): ${(used / (total - from)).toFixed(1)} µs CPU a key merged`);
  }
} finally {
  db.close();
  rmSync(dir, { recursive: true, force: true });
}
