// Issue #41 §5 (docs/decisions/hosting-layout.md): what the start-up migration from single mode to an
// environment key costs a database with 1,000,000 executions and 100,000 entities, on both dialects.
// The database is made by the real `openStore` (our migrations), filled with plain inserts, then migrated:
//   executions: ADD COLUMN environment (default 1), its principal index (and on PostgreSQL its request-key
//   index) rebuilt with it first (its primary key, a server-made id, stays);
//   data_entities: its primary key becomes (environment, id): PostgreSQL swaps the constraint, SQLite,
//   whose ALTER TABLE cannot change a primary key, copies the table.
// Uses a temporary directory and a PostgreSQL database named layout_<pid>_migrate, dropped at the end.
// Not part of `bun run bench`.
//
//   bun bench/layout-migrate.ts [ADMIN_URL=postgres://postgres@127.0.0.1:5432/postgres]
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { openStore } from "../src/store/open.ts";

const ADMIN_URL = process.argv[2] ?? "postgres://postgres@127.0.0.1:5432/postgres";
const EXECUTIONS = 1_000_000;
const ENTITIES = 100_000;

function show(...parts: unknown[]) {
  console.log(parts.map((part) => (typeof part === "string" ? part : JSON.stringify(part))).join(" "));
}

/** Runs each named step, answering how long each took (ms). */
async function steps(run: (statement: string) => unknown, named: Record<string, string[]>) {
  const times: Record<string, number> = {};
  for (const [name, statements] of Object.entries(named)) {
    const started = performance.now();
    for (const statement of statements) await run(statement);
    times[name] = Math.round(performance.now() - started);
  }
  return times;
}

/** An execution's values over a series named `i`, its id padded by `padded` (the dialects spell that apart). */
const executionValues = (
  padded: string,
) => `'0190' || ${padded}, 'req-' || i, 'user', 'user-' || (i % 1000), 'echo', 'function',
  'v1', 'c', 'f', '{"text":"hello"}', 'succeeded', '{"text":"hello"}', null, null, 1700000000000 + i, 1700000000000 + i,
  1700000000000 + i, null, null, 16, 16`;

const indexSteps = {
  "executions: add the column": ["alter table executions add column environment integer not null default 1"],
  "executions: the principal index rebuilt": [
    "drop index executions_principal_id_idx",
    "create index executions_principal_id_idx on executions (environment, principal_kind, principal_id, id)",
  ],
};

async function onPostgres() {
  const name = `layout_${process.pid}_migrate`;
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  try {
    const url = ADMIN_URL.replace(/\/[^/]*$/, `/${name}`);
    await (await openStore(url)).close();
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    await sql.unsafe(`insert into executions (id, request_id, principal_kind, principal_id, action, kind, release_version,
        contract_hash, input_fingerprint, input, status, output, error_code, error_message, created_at, started_at,
        finished_at, instance, scheduled_by, input_bytes, output_bytes)
      select ${executionValues("lpad(i::text, 12, '0')")}
      from generate_series(1, ${EXECUTIONS}) i`);
    await sql.unsafe(`insert into data_entities select 'ent_' || lpad(i::text, 8, '0'), 'task_' || (i % 20),
        jsonb_build_object('title', 'Task number ' || i, 'notes', repeat(md5(i::text), 6)), i, i
      from generate_series(1, ${ENTITIES}) i`);
    await sql.unsafe("vacuum analyze");
    const [size] = await sql`select pg_database_size(current_database()) as size`;
    const times = await steps((statement) => sql.unsafe(statement), {
      ...indexSteps,
      "executions: the request-key index rebuilt": [
        "drop index executions_request_uq",
        "create unique index executions_request_uq on executions (environment, principal_kind, principal_id, request_id)",
      ],
      "data_entities: the primary key swapped": [
        "alter table data_entities add column environment integer not null default 1",
        "alter table data_entities drop constraint data_entities_pkey",
        "alter table data_entities add primary key (environment, id)",
      ],
    });
    show(`PostgreSQL, ${Math.round(Number(size?.size) / 2 ** 20)} MiB`, times);
    await sql.end();
  } finally {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}

async function onSqlite() {
  const dir = mkdtempSync(join(tmpdir(), "layout-migrate-"));
  const path = join(dir, "actuate.db");
  try {
    await (await openStore(`sqlite:${path}`)).close();
    const db = new Database(path, { strict: true });
    db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536");
    db.run(`insert into executions (id, request_id, principal_kind, principal_id, action, kind, release_version,
        contract_hash, input_fingerprint, input, status, output, error_code, error_message, created_at, started_at,
        finished_at, instance, scheduled_by, input_bytes, output_bytes)
      with recursive series(i) as (select 1 union all select i + 1 from series where i < ${EXECUTIONS})
      select ${executionValues("printf('%012d', i)")} from series`);
    db.run(`insert into data_entities
      with recursive series(i) as (select 1 union all select i + 1 from series where i < ${ENTITIES})
      select 'ent_' || printf('%08d', i), 'task_' || (i % 20),
        json_object('title', 'Task number ' || i, 'notes', hex(randomblob(48))), i, i from series`);
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    const megabytes = Math.round(statSync(path).size / 2 ** 20);
    const times = await steps((statement) => db.run(statement), {
      ...indexSteps,
      "data_entities: copied with the new primary key": [
        "begin",
        `create table data_entities_new (environment integer not null default 1, id text not null, entity text not null,
          doc text not null, created_at integer not null, updated_at integer not null, primary key (environment, id))`,
        "insert into data_entities_new select 1, id, entity, doc, created_at, updated_at from data_entities",
        "drop table data_entities",
        "alter table data_entities_new rename to data_entities",
        "create index data_entities_entity_idx on data_entities (environment, entity, created_at, id)",
        "commit",
      ],
    });
    show(`SQLite, ${megabytes} MiB`, times);
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await onSqlite();
await onPostgres();
