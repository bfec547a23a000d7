import { describe, expect, test } from "bun:test";
import { openStore } from "../../src/store/open.ts";
import { dialects, runStatement, selectRows } from "../support/databases.ts";
import { migrateToBefore } from "../support/migrations.ts";

const TAG = "environments";

/** Every table whose rows belong to an environment (docs/decisions/hosting-layout.md). */
const ENVIRONMENT_TABLES = [
  "releases",
  "executions",
  "execution_logs",
  "workflow_runs",
  "workflow_steps",
  "scheduled_invocations",
  "schedule_ticks",
  "data_attrs",
  "data_entities",
  "data_links",
  "files",
  "api_tokens",
];

for (const dialect of dialects) {
  describe(`migration ${TAG} (${dialect.name})`, () => {
    test("a single-mode database becomes environment 1: its rows, its active release and its revision kept", async () => {
      const database = await dialect.create();
      try {
        await migrateToBefore(TAG, dialect.name === "sqlite" ? "sqlite" : "pg", database.url);
        const manifest = dialect.name === "sqlite" ? "'{}'" : "'{}'::jsonb";
        const at = 1_800_000_000_000;
        await runStatement(
          database.url,
          `insert into releases (version, bundle_hash, manifest, bundle, created_at) values ('t1', 'h', ${manifest}, 'code', ${at})`,
        );
        await runStatement(
          database.url,
          `insert into environment (id, active_version, revision, updated_at) values (1, 't1', 3, ${at + 5})`,
        );
        const id = Bun.randomUUIDv7();
        await runStatement(
          database.url,
          `insert into executions (id, request_id, principal_kind, principal_id, action, kind, release_version, contract_hash,
             input_fingerprint, input, status, created_at, input_bytes)
           values ('${id}', 'req-1', 'user', 'alice', 'a.b', 'function', 't1', 'c', 'f', '{}', 'running', ${at}, 2)`,
        );
        await runStatement(
          database.url,
          `insert into data_entities (id, entity, doc, created_at, updated_at) values ('e1', 'notes', '{}', ${at}, ${at})`,
        );
        await runStatement(
          database.url,
          `insert into data_attrs (id, entity, label, created_at) values ('a1', 'notes', 'title', ${at})`,
        );
        await runStatement(
          database.url,
          `insert into files (path, content_type, owner_kind, owner_id, created_at, updated_at)
           values ('docs/a.txt', 'text/plain', 'user', 'alice', ${at}, ${at})`,
        );
        await runStatement(
          database.url,
          `insert into schedule_ticks (name, last_tick_at, lease_expires_at) values ('nightly', ${at}, 0)`,
        );

        const store = await openStore(database.url);
        try {
          expect(store.environmentId).toBe(1);
          expect(await store.releases.active()).toEqual({ version: "t1", revision: 3, activatedAt: at + 5 });
          expect(await store.releases.get("t1")).toMatchObject({ version: "t1", bundle: "code" });
          expect(await store.executions.get(id)).toMatchObject({ requestId: "req-1", status: "running" });
          expect(await store.files.get("docs/a.txt")).toMatchObject({ ownerId: "alice" });
          for (const table of ENVIRONMENT_TABLES) {
            const rows = await selectRows(database.url, `select distinct environment from ${table}`);
            expect(rows.map((row) => Number(row.environment)).filter((n) => n !== 1)).toEqual([]);
          }
          const [environment] = await selectRows(
            database.url,
            "select id, handle, organization, active_version, revision, changed from environments",
          );
          const numbered: Record<string, unknown> = {
            ...environment,
            id: Number(environment?.id),
            changed: Number(environment?.changed),
          };
          expect(numbered).toEqual({
            id: 1,
            handle: null,
            organization: null,
            active_version: "t1",
            revision: 3,
            changed: 3,
          });
          // A second environment starts empty, and an activation there leaves environment 1 alone.
          await runStatement(
            database.url,
            `insert into environments (id, handle, revision, updated_at, created_at, changed) values (2, 'two', 0, 0, 0, 0)`,
          );
          const two = store.environment(2);
          expect(await two.releases.get("t1")).toBeNull();
          expect(await two.releases.active()).toEqual({ version: null, revision: 0, activatedAt: null });
          const t1 = await store.releases.get("t1");
          if (!t1) throw new Error("t1 is gone");
          await two.releases.insert({ ...t1, createdAt: at + 9 });
          expect(await two.releases.activate("t1", at + 10)).toBe(1);
          expect(await store.releases.active()).toEqual({ version: "t1", revision: 3, activatedAt: at + 5 });
          const changed = await selectRows(database.url, "select id, changed from environments order by id");
          expect(changed.map((row) => [Number(row.id), Number(row.changed)])).toEqual([
            [1, 3],
            [2, 4],
          ]);
        } finally {
          await store.close();
        }
      } finally {
        await database.drop();
      }
    }, 60_000);

    test("a new database has environment 1, with no release active", async () => {
      const database = await dialect.create();
      try {
        const store = await openStore(database.url);
        try {
          expect(await store.releases.active()).toEqual({ version: null, revision: 0, activatedAt: null });
          const rows = await selectRows(database.url, "select id, handle from environments");
          expect(rows.map((row) => [Number(row.id), row.handle])).toEqual([[1, null]]);
          // PostgreSQL's identity starts after environment 1: the next environment made is 2.
          if (dialect.name !== "sqlite") {
            await runStatement(
              database.url,
              "insert into environments (handle, revision, updated_at, created_at, changed) values ('next', 0, 0, 0, 0)",
            );
            const [next] = await selectRows(database.url, "select id from environments where handle = 'next'");
            expect(Number(next?.id)).toBe(2);
          }
        } finally {
          await store.close();
        }
      } finally {
        await database.drop();
      }
    }, 60_000);
  });
}
