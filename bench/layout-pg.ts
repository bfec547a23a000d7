// Issue #41 §5 (docs/decisions/hosting-layout.md): what each PostgreSQL layout for many environments costs.
//   1. a schema per environment: our migrations applied N times (time, catalog size, one backend's cache
//      after touching every environment's tables);
//   2. a database per environment: CREATE DATABASE … TEMPLATE of a migrated database (time, size);
//   3. a fork of 100,000 entities and 10,000 files: CREATE DATABASE … TEMPLATE (the source must have no
//      connections), and INSERT … SELECT within one table keyed by environment, while a probe writes to
//      the source (its latency during the fork against before);
//   4. the extra key on the hot write: executions with the request-key index on (principal, request_id)
//      against (environment, principal, request_id).
// Works in databases named layout_<pid>_*, dropped at the end. Not part of `bun run bench`.
//
//   bun bench/layout-pg.ts [SCHEMAS=1000] [ADMIN_URL=postgres://postgres@127.0.0.1:5432/postgres]
// SKIP_SCHEMAS=1 leaves out part 1, the longest (~2 min at 1,000 schemas).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";

const SCHEMAS = Number(process.argv[2] ?? 1000);
const ADMIN_URL = process.argv[3] ?? "postgres://postgres@127.0.0.1:5432/postgres";
const ENTITIES = 100_000;
const FILES = 10_000;
const prefix = `layout_${process.pid}`;
const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
const urlOf = (database: string) => ADMIN_URL.replace(/\/[^/]*$/, `/${database}`);
const created: string[] = [];

function show(...parts: unknown[]) {
  console.log(parts.map((part) => (typeof part === "string" ? part : JSON.stringify(part))).join(" "));
}
const percentile = (values: number[], p: number) =>
  +([...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))] ?? 0).toFixed(2);
const mib = (bytes: number | string) => +(Number(bytes) / 2 ** 20).toFixed(1);

/** Our migrations' statements, as `openStore` applies them (0016-0018 name "public": left out for a schema). */
function migrationStatements(): string[] {
  const folder = join(import.meta.dir, "..", "drizzle", "pg");
  return readdirSync(folder)
    .filter((name) => name.endsWith(".sql"))
    .sort()
    .flatMap((name) => readFileSync(join(folder, name), "utf8").split("--> statement-breakpoint"))
    .map((statement) => statement.replaceAll('"public".', "").trim())
    .filter((statement) => statement.length > 0);
}

async function createDatabase(name: string, template?: string) {
  await admin.unsafe(`create database ${name}${template ? ` template ${template}` : ""}`);
  created.push(name);
}

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const result = await work();
  return [result, +(performance.now() - started).toFixed(1)];
}

const statements = migrationStatements();

async function schemaPerEnvironment() {
  const name = `${prefix}_schemas`;
  await createDatabase(name);
  const sql = postgres(urlOf(name), { max: 1, onnotice: () => {} });
  const before = (await sql`select pg_database_size(current_database()) as size`)[0]?.size;
  const perSchema: number[] = [];
  for (let i = 0; i < SCHEMAS; i++) {
    const [, ms] = await timed(() =>
      sql.begin(async (tx) => {
        await tx.unsafe(`create schema env_${i}; set local search_path = env_${i}`);
        for (const statement of statements) await tx.unsafe(statement);
      }),
    );
    perSchema.push(ms);
  }
  const [catalog] = await sql`select pg_database_size(current_database()) as size,
    (select count(*) from pg_class) as relations, (select count(*) from pg_attribute) as attributes`;
  show(`schema per environment: ${SCHEMAS} schemas`, {
    totalS: +(perSchema.reduce((a, b) => a + b, 0) / 1000).toFixed(1),
    perSchemaMs: { p50: percentile(perSchema, 0.5), p99: percentile(perSchema, 0.99) },
    databaseMiB: mib(catalog?.size),
    perSchemaKiB: Math.round((Number(catalog?.size) - Number(before)) / SCHEMAS / 1024),
    relations: Number(catalog?.relations),
    attributes: Number(catalog?.attributes),
  });
  await sql.end();
  // A new pooled backend serving every environment: touch each schema's hot tables once.
  const reader = postgres(urlOf(name), { max: 1, onnotice: () => {} });
  const cache = async () =>
    (await reader`select coalesce(sum(total_bytes), 0) as bytes from pg_backend_memory_contexts`)[0]?.bytes;
  const cold = await cache();
  const touch: number[] = [];
  for (let i = 0; i < SCHEMAS; i++) {
    const [, ms] = await timed(() =>
      reader.unsafe(
        `select count(*) from env_${i}.executions where id = 'x';
         select count(*) from env_${i}.workflow_runs where wake_at < 0;
         select count(*) from env_${i}.data_entities where id = 'x'`,
      ),
    );
    touch.push(ms);
  }
  const warm = await cache();
  show("one backend after reading 3 tables of every schema", {
    backendMiB: { before: mib(cold), after: mib(warm) },
    firstReadMs: { p50: percentile(touch, 0.5), p99: percentile(touch, 0.99) },
  });
  // Due work across schemas: one statement has to name every schema (a UNION ALL of N branches).
  const union = Array.from(
    { length: SCHEMAS },
    (_, i) =>
      `(select '${i}' as env, id, wake_at from env_${i}.workflow_runs where status in ('queued','running','sleeping') and wake_at <= $1 limit 16)`,
  ).join(" union all ");
  const unionMs: number[] = [];
  for (let i = 0; i < 5; i++) unionMs.push((await timed(() => reader.unsafe(union, [Date.now()])))[1]);
  show(`due runs of ${SCHEMAS} schemas in one UNION ALL`, { ms: unionMs });
  await reader.end();
}

async function databasePerEnvironment() {
  const template = `${prefix}_tpl`;
  await createDatabase(template);
  const sql = postgres(urlOf(template), { max: 1, onnotice: () => {} });
  for (const statement of statements) await sql.unsafe(statement);
  await sql.end();
  const times: number[] = [];
  for (let i = 0; i < 10; i++) times.push((await timed(() => createDatabase(`${prefix}_env_${i}`, template)))[1]);
  const [size] = await admin`select pg_database_size(${`${prefix}_env_0`}) as size`;
  show("database per environment: CREATE DATABASE … TEMPLATE of a migrated one", {
    ms: { p50: percentile(times, 0.5), max: Math.max(...times) },
    databaseMiB: mib(size?.size),
  });
}

/** data_entities and files as the store has them, with an `environment` key first when `keyed`. */
function tables(keyed: boolean, table = (name: string) => name) {
  const env = keyed ? "environment text not null, " : "";
  const key = (columns: string) => (keyed ? `environment, ${columns}` : columns);
  return `
    create table ${table("data_entities")} (${env}id text not null, entity text not null, doc jsonb not null,
      created_at bigint not null, updated_at bigint not null, primary key (${key("id")}));
    create index on ${table("data_entities")} (${key("entity, created_at, id")});
    create table ${table("files")} (${env}path text not null, content_type text not null, size bigint, sha256 text,
      owner_kind text not null, owner_id text not null, created_at bigint not null, updated_at bigint not null,
      execution_id text, field text, filename text, primary key (${key("path")}));
    create index on ${table("files")} (execution_id);
    create index on ${table("files")} (${key("owner_kind, owner_id, path")});`;
}

/** 100,000 entities (~300-byte documents) and 10,000 files of one environment. */
function fill(keyed: boolean, environment = "src") {
  const env = keyed ? `'${environment}', ` : "";
  return `
    insert into data_entities select ${env}'ent_' || lpad(i::text, 8, '0'), 'task_' || (i % 20),
      jsonb_build_object('title', 'Task number ' || i, 'done', i % 3 = 0, 'owner', 'user-' || (i % 1000),
        'notes', repeat(md5(i::text), 6), 'due', 1700000000000 + i),
      1700000000000 + i, 1700000000000 + i
    from generate_series(1, ${ENTITIES}) i;
    insert into files select ${env}'files/' || lpad(i::text, 6, '0') || '.bin', 'application/octet-stream', 4096,
      md5(i::text) || md5((i + 1)::text), 'user', 'user-' || (i % 1000), 1700000000000, 1700000000000, null, null, null
    from generate_series(1, ${FILES}) i;`;
}

/** Writes to the source while `during` runs; answers the probe's write latencies (ms). */
async function probe(url: string, keyed: boolean, during: () => Promise<number>) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const where = keyed ? "environment = 'src' and " : "";
  let stop = false;
  const latencies: number[] = [];
  const loop = (async () => {
    for (let i = 0; !stop; i++) {
      const started = performance.now();
      await sql.unsafe(
        `update data_entities set updated_at = updated_at + 1 where ${where}id = 'ent_${String((i % ENTITIES) + 1).padStart(8, "0")}'`,
      );
      latencies.push(performance.now() - started);
    }
  })();
  await Bun.sleep(1000);
  const idle = latencies.splice(0);
  const ms = await during();
  stop = true;
  await loop;
  await sql.end();
  return {
    forkMs: ms,
    sourceWriteMs: {
      before: { p50: percentile(idle, 0.5), p99: percentile(idle, 0.99) },
      during: { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), n: latencies.length },
    },
  };
}

/** A new database holding the source environment's entities and files; its connection. */
async function seeded(name: string, keyed: boolean) {
  await createDatabase(name);
  const sql = postgres(urlOf(name), { max: 1, onnotice: () => {} });
  await sql.unsafe(tables(keyed));
  await sql.unsafe(fill(keyed));
  await sql.unsafe("vacuum analyze");
  return sql;
}

async function fork() {
  // A database per environment: the source must have no session while it is copied.
  const source = `${prefix}_src`;
  const src = await seeded(source, false);
  const [size] = await src`select pg_database_size(current_database()) as size`;
  await src.end();
  for (const strategy of ["wal_log", "file_copy"]) {
    const [, ms] = await timed(() =>
      admin.unsafe(`create database ${prefix}_fork_${strategy} template ${source} strategy ${strategy}`),
    );
    created.push(`${prefix}_fork_${strategy}`);
    show(`fork by CREATE DATABASE … TEMPLATE (strategy ${strategy})`, { ms, sourceMiB: mib(size?.size) });
  }

  // One database, an environment column: INSERT … SELECT, the source written meanwhile.
  const keyedName = `${prefix}_keyed`;
  const sql = await seeded(keyedName, true);
  // The source's rows into `into(table)` (with the key `fork` when `keyed`), in one transaction.
  const copy = (into: (table: string) => string, keyed: boolean) => async () => {
    const key = keyed ? "'fork', " : "";
    const [, ms] = await timed(() =>
      sql.begin((tx) =>
        tx.unsafe(`
          insert into ${into("data_entities")} select ${key}id, entity, doc, created_at, updated_at
            from data_entities where environment = 'src';
          insert into ${into("files")} select ${key}path, content_type, size, sha256, owner_kind, owner_id, created_at,
            updated_at, execution_id, field, filename from files where environment = 'src';`),
      ),
    );
    return ms;
  };
  show(
    "fork by INSERT … SELECT (environment column)",
    await probe(
      urlOf(keyedName),
      true,
      copy((t) => t, true),
    ),
  );
  // The same into a schema of its own (a schema per environment).
  await sql.unsafe(`create schema fork2; ${tables(false, (name) => `fork2.${name}`)}`);
  show(
    "fork by INSERT … SELECT into another schema",
    await probe(
      urlOf(keyedName),
      true,
      copy((t) => `fork2.${t}`, false),
    ),
  );
  await sql.end();
}

async function extraKey() {
  const name = `${prefix}_key`;
  await createDatabase(name);
  const sql = postgres(urlOf(name), { max: 1, onnotice: () => {} });
  const rows = 200_000;
  const batch = 64;
  for (const keyed of [false, true, false, true, false, true]) {
    const env = keyed ? "environment, " : "";
    await sql.unsafe(`drop table if exists executions;
      create table executions (${keyed ? "environment text not null, " : ""}id text primary key, request_id text not null,
        principal_kind text not null, principal_id text not null, action text not null, status text not null,
        input jsonb not null, created_at bigint not null, finished_at bigint);
      create unique index on executions (${env}principal_kind, principal_id, request_id);
      create index on executions (${env}principal_kind, principal_id, id);
      create index on executions (finished_at) where finished_at is not null;`);
    const [, ms] = await timed(async () => {
      for (let i = 0; i < rows; i += batch) {
        await sql.unsafe(`insert into executions select ${keyed ? "'env-' || (i % 1000), " : ""}
            gen_random_uuid()::text, gen_random_uuid()::text, 'user', 'user-' || (i % 1000), 'echo', 'succeeded',
            '{"text":"hello"}', ${Date.now()}, ${Date.now()}
          from generate_series(${i}, ${i + batch - 1}) i`);
      }
    });
    const [size] = await sql`select pg_total_relation_size('executions') as size`;
    show(`executions ${keyed ? "with" : "without"} an environment key: ${rows} rows in batches of ${batch}`, {
      usPerRow: +((ms * 1000) / rows).toFixed(1),
      tableAndIndexesMiB: mib(size?.size),
    });
  }
  await sql.end();
}

try {
  if (!process.env.SKIP_SCHEMAS) await schemaPerEnvironment();
  await databasePerEnvironment();
  await fork();
  await extraKey();
} finally {
  for (const name of created.reverse()) await admin.unsafe(`drop database if exists ${name} with (force)`);
  await admin.end();
}
