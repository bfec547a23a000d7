// Issue #41 §5 (docs/decisions/hosting-layout.md): one claim of due workflow runs for every environment,
// and what keeping one busy environment from taking every slot costs (PostgreSQL). 1,000 environments:
// environment 1 has 90,000 due runs, older than the others' 10 each (10,000 runs without a wake yet).
// Each claim takes 16 runs (`for update skip locked`, rolled back), timed 20 times:
//   plain        today's claim (`workflow_runs_due_idx` on wake_at), whoever is oldest;
//   partitioned  at most 2 runs an environment, by `row_number() over (partition by environment)`;
//   excluding    today's claim without the environments that hold their share already (`<> all($busy)`);
//   lateral      the oldest 2 of each environment through an (environment, wake_at) index, then the 16 oldest.
// Works in a database named layout_<pid>_claim, dropped at the end. Not part of `bun run bench`.
//
//   bun bench/layout-fair-claim.ts [ADMIN_URL=postgres://postgres@127.0.0.1:5432/postgres]
import postgres from "postgres";

const ADMIN_URL = process.argv[2] ?? "postgres://postgres@127.0.0.1:5432/postgres";
const name = `layout_${process.pid}_claim`;
const WAITING = "status in ('queued', 'running', 'sleeping')";
const DUE = `${WAITING} and wake_at <= $1 and (lease_expires_at is null or lease_expires_at < $1)`;

const claims = {
  plain: `select id, environment from workflow_runs where ${DUE} order by wake_at limit 16 for update skip locked`,
  partitioned: `select id, environment from workflow_runs where id in (
      select id from (select id, row_number() over (partition by environment order by wake_at) as n
        from workflow_runs where ${DUE}) ranked where n <= 2)
    order by wake_at limit 16 for update skip locked`,
  excluding: `select id, environment from workflow_runs where ${DUE} and environment <> all($2::int[])
    order by wake_at limit 16 for update skip locked`,
  lateral: `select r.id, r.environment from environments e cross join lateral (
      select id, environment, wake_at from workflow_runs
      where environment = e.id and ${DUE} order by wake_at limit 2) r
    order by r.wake_at limit 16`,
};

const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
await admin.unsafe(`create database ${name}`);
try {
  const sql = postgres(ADMIN_URL.replace(/\/[^/]*$/, `/${name}`), { max: 1, onnotice: () => {} });
  await sql.unsafe(`
    create table environments (id integer primary key);
    insert into environments select i from generate_series(1, 1000) i;
    create table workflow_runs (id text primary key, environment integer not null, status text not null,
      wake_at bigint not null, lease_expires_at bigint, payload text);
    create index workflow_runs_due_idx on workflow_runs (wake_at) where ${WAITING};
    create index workflow_runs_environment_due_idx on workflow_runs (environment, wake_at) where ${WAITING};
    insert into workflow_runs select 'busy-' || i, 1, 'queued', i, null, repeat('x', 200) from generate_series(1, 90000) i;
    insert into workflow_runs select 'env-' || i, 2 + i % 999, 'queued', 100000 + i, null, repeat('x', 200)
      from generate_series(1, 9990) i;
    insert into workflow_runs select 'later-' || i, 2 + i % 999, 'sleeping', 10000000 + i, null, repeat('x', 200)
      from generate_series(1, 10000) i;`);
  await sql.unsafe("vacuum analyze");
  const now = 1_000_000;
  for (const [claim, statement] of Object.entries(claims)) {
    const times: number[] = [];
    let environments = 0;
    for (let i = 0; i < 20; i++) {
      await sql
        .begin(async (tx) => {
          const started = performance.now();
          const rows = await tx.unsafe(statement, claim === "excluding" ? [now, [1]] : [now]);
          times.push(performance.now() - started);
          environments = new Set(rows.map((row) => row.environment)).size;
          throw new Error("rollback");
        })
        .catch(() => {});
    }
    times.sort((a, b) => a - b);
    console.log(
      `${claim}: ${environments} environments in 16 runs, ` +
        `p50 ${times[10]?.toFixed(2)} ms, max ${times[19]?.toFixed(2)} ms`,
    );
  }
  await sql.end();
} finally {
  await admin.unsafe(`drop database if exists ${name} with (force)`);
  await admin.end();
}
