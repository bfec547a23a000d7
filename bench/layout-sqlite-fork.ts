// Issue #41 §5 (docs/decisions/hosting-layout.md): forking a SQLite environment of 100,000 entities and
// 10,000 files, and the extra key of an environment column on the hot write.
//   1. a file per environment: VACUUM INTO (run by another process, as a worker thread would) while the
//      serving connection writes to the source (its latency before and during), and a plain file copy;
//   2. one file, an environment column: INSERT … SELECT, which holds the one write lock for its length
//      (every environment's writes wait that long), and the same in slices of 2,000 rows;
//   3. executions with the principal index keyed by (principal, id) against (environment, principal, id),
//      the environment a handle (text) or an integer; batches of 64 rows a transaction, as the group commit.
// Uses a temporary directory. Not part of `bun run bench`.
//
//   bun bench/layout-sqlite-fork.ts
import { Database } from "bun:sqlite";
import { copyFileSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../src/store/open.ts";

const ENTITIES = 100_000;
const FILES = 10_000;
const dir = mkdtempSync(join(tmpdir(), "layout-fork-"));

function show(...parts: unknown[]) {
  console.log(parts.map((part) => (typeof part === "string" ? part : JSON.stringify(part))).join(" "));
}
const percentile = (values: number[], p: number) =>
  +([...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))] ?? 0).toFixed(2);
const mib = (bytes: number) => +(bytes / 2 ** 20).toFixed(1);

function timed(work: () => void): number {
  const started = performance.now();
  work();
  return +(performance.now() - started).toFixed(1);
}

function open(path: string) {
  const db = new Database(path, { strict: true });
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000");
  return db;
}

/** 100,000 entities (~300-byte documents) and 10,000 files, with an environment value first when given. */
function fill(db: Database, environment?: string) {
  const env = environment === undefined ? [] : [environment];
  const marks = (n: number) => Array.from({ length: n + env.length }, () => "?").join(", ");
  const entity = db.prepare(`insert into data_entities values (${marks(5)})`);
  const file = db.prepare(`insert into files (${environment === undefined ? "" : "environment, "}path, content_type,
    size, sha256, owner_kind, owner_id, created_at, updated_at) values (${marks(8)})`);
  db.transaction(() => {
    for (let i = 1; i <= ENTITIES; i++) {
      const doc = { title: `Task number ${i}`, done: i % 3 === 0, owner: `user-${i % 1000}`, notes: "ab12".repeat(48) };
      entity.run(
        ...env,
        `ent_${String(i).padStart(8, "0")}`,
        `task_${i % 20}`,
        JSON.stringify(doc),
        1e12 + i,
        1e12 + i,
      );
    }
    for (let i = 1; i <= FILES; i++) {
      file.run(
        ...env,
        `files/${String(i).padStart(6, "0")}.bin`,
        "application/octet-stream",
        4096,
        "e".repeat(64),
        "user",
        `user-${i % 1000}`,
        1e12,
        1e12,
      );
    }
  })();
}

// 1. A file per environment: the real schema, migrated by openStore.
const source = join(dir, "src", "actuate.db");
await (await openStore(`sqlite:${source}`)).close();
const serving = open(source);
fill(serving);
serving.exec("PRAGMA wal_checkpoint(TRUNCATE)");
show("source file", { MiB: mib(statSync(source).size) });

const touch = serving.prepare("update data_entities set updated_at = updated_at + 1 where id = ?");
async function writesWhile(done: Promise<unknown>) {
  let finished = false;
  done.then(() => {
    finished = true;
  });
  const latencies: number[] = [];
  for (let i = 0; !finished; i++) {
    latencies.push(timed(() => touch.run(`ent_${String((i % ENTITIES) + 1).padStart(8, "0")}`)));
    await Bun.sleep(1);
  }
  return {
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    max: Math.max(...latencies),
    n: latencies.length,
  };
}

const idle = await writesWhile(Bun.sleep(1000));
const target = join(dir, "fork-vacuum.db");
const child = Bun.spawn(
  [
    process.execPath,
    "-e",
    `const { Database } = require("bun:sqlite"); const db = new Database(${JSON.stringify(source)});
     db.exec("PRAGMA busy_timeout = 5000"); const t = performance.now();
     db.exec("VACUUM INTO " + ${JSON.stringify(`'${target}'`)}); console.log((performance.now() - t).toFixed(1));`,
  ],
  { stdout: "pipe" },
);
const during = await writesWhile(child.exited);
show("fork by VACUUM INTO (another process)", {
  ms: Number((await new Response(child.stdout).text()).trim()),
  forkMiB: mib(statSync(target).size),
  sourceWriteMs: { before: idle, during },
});
show("fork by copying the checkpointed file (no writes meanwhile)", {
  ms: timed(() => copyFileSync(source, join(dir, "fork-copy.db"))),
});
serving.close();

// 2. One file, an environment column.
const shared = open(join(dir, "shared.db"));
shared.exec(`
  create table data_entities (environment text not null, id text not null, entity text not null, doc text not null,
    created_at integer not null, updated_at integer not null, primary key (environment, id)) without rowid;
  create index data_entities_entity_idx on data_entities (environment, entity, created_at, id);
  create table files (environment text not null, path text not null, content_type text not null, size integer,
    sha256 text, owner_kind text not null, owner_id text not null, created_at integer not null,
    updated_at integer not null, execution_id text, field text, filename text, primary key (environment, path));
  create index files_owner_path_idx on files (environment, owner_kind, owner_id, path);`);
fill(shared, "src");
shared.exec("PRAGMA wal_checkpoint(TRUNCATE)");
show("fork by INSERT … SELECT in one file (the write lock held throughout)", {
  ms: timed(() =>
    shared.transaction(() => {
      shared.run(`insert into data_entities select 'fork', id, entity, doc, created_at, updated_at
        from data_entities where environment = 'src'`);
      shared.run(`insert into files select 'fork', path, content_type, size, sha256, owner_kind, owner_id, created_at,
        updated_at, execution_id, field, filename from files where environment = 'src'`);
    })(),
  ),
});
// The same in slices of 2,000 rows (by key), so other writes wait one slice at most (into a second fork).
const slices: number[] = [];
for (const [table, key, columns] of [
  ["data_entities", "id", "id, entity, doc, created_at, updated_at"],
  [
    "files",
    "path",
    "path, content_type, size, sha256, owner_kind, owner_id, created_at, updated_at, execution_id, field, filename",
  ],
] as const) {
  let after = "";
  for (;;) {
    let copied = 0;
    slices.push(
      timed(() => {
        const rows = shared
          .query(
            `select ${key} as key from ${table} where environment = 'src' and ${key} > ?1 order by ${key} limit 2000`,
          )
          .all(after) as { key: string }[];
        if (rows.length === 0) return;
        const last = (rows[rows.length - 1] as { key: string }).key;
        shared.run(
          `insert into ${table} (environment, ${columns}) select 'fork2', ${columns} from ${table}
            where environment = 'src' and ${key} > ?1 and ${key} <= ?2`,
          [after, last],
        );
        copied = rows.length;
        after = last;
      }),
    );
    if (copied === 0) break;
  }
}
show("fork by INSERT … SELECT in slices of 2,000 rows", {
  ms: +slices.reduce((a, b) => a + b, 0).toFixed(1),
  slices: slices.length,
  sliceMs: { p50: percentile(slices, 0.5), max: Math.max(...slices) },
});
shared.close();

// 3. The extra key on the hot write: none, a handle (text) or an integer id.
const rows = 200_000;
const batch = 64;
type Key = "none" | "text" | "integer";
const keyValue = (key: Key, i: number) => (key === "text" ? [`env-${i % 1000}`] : key === "integer" ? [i % 1000] : []);
for (const key of ["none", "text", "integer", "none", "text", "integer", "none", "text", "integer"] as Key[]) {
  const path = join(dir, `key-${key}.db`);
  rmSync(path, { force: true });
  const db = open(path);
  const env = key === "none" ? "" : "environment, ";
  db.exec(`create table executions (${key === "none" ? "" : `environment ${key} not null, `}id text primary key,
      request_id text not null, principal_kind text not null, principal_id text not null, action text not null,
      status text not null, input text not null, created_at integer not null, finished_at integer);
    create index executions_principal_id_idx on executions (${env}principal_kind, principal_id, id);
    create index executions_finished_idx on executions (finished_at) where finished_at is not null;`);
  const insert = db.prepare(
    `insert into executions values (${env ? "?, " : ""}?, ?, 'user', ?, 'echo', 'succeeded', '{"text":"hello"}', ?, ?)`,
  );
  const write = db.transaction((from: number) => {
    for (let i = from; i < from + batch; i++) {
      insert.run(
        ...keyValue(key, i),
        Bun.randomUUIDv7(),
        crypto.randomUUID(),
        `user-${i % 1000}`,
        Date.now(),
        Date.now(),
      );
    }
  });
  const ms = timed(() => {
    for (let i = 0; i < rows; i += batch) write(i);
  });
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  show(`executions, environment key ${key}: ${rows} rows, ${batch} a transaction`, {
    usPerRow: +((ms * 1000) / rows).toFixed(1),
    fileMiB: mib(statSync(path).size),
  });
  db.close();
}
rmSync(dir, { recursive: true, force: true });
