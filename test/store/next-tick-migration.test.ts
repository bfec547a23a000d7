import { describe, expect, test } from "bun:test";
import { openStore } from "../../src/store/open.ts";
import { dialects, runStatement, selectRows } from "../support/databases.ts";
import { migrateToBefore } from "../support/migrations.ts";

const TAG = "environments_next_tick";

for (const dialect of dialects) {
  describe(`migration ${TAG} (${dialect.name})`, () => {
    test("an environment whose active release has schedules is due at once; one without, or without a release, never", async () => {
      const database = await dialect.create();
      try {
        await migrateToBefore(TAG, dialect.name === "sqlite" ? "sqlite" : "pg", database.url);
        const json = (value: unknown) => `'${JSON.stringify(value)}'${dialect.name === "sqlite" ? "" : "::jsonb"}`;
        const at = 1_800_000_000_000;
        for (const [id, handle] of [
          [2, "ticks"],
          [3, "quiet"],
          [4, "empty"],
        ] as const) {
          await runStatement(
            database.url,
            `insert into environments (id, handle, revision, updated_at, created_at, changed) values (${id}, '${handle}', 1, ${at}, ${at}, ${id})`,
          );
        }
        const release = (environment: number, manifest: unknown) =>
          runStatement(
            database.url,
            `insert into releases (environment, version, bundle_hash, manifest, bundle, created_at)
             values (${environment}, 'v1', 'h', ${json(manifest)}, 'code', ${at})`,
          );
        await release(2, { schedules: [{ name: "beat", action: "a.b" }] });
        await release(3, { schedules: [] });
        await runStatement(database.url, `update environments set active_version = 'v1' where id in (2, 3)`);

        const store = await openStore(database.url);
        await store.close();
        const rows = await selectRows(database.url, "select id, next_tick_at from environments order by id");
        const due = Object.fromEntries(rows.map((row) => [Number(row.id), row.next_tick_at]));
        expect(due[2] === null ? null : Number(due[2])).toBe(0);
        expect(due[3]).toBeNull();
        expect(due[4]).toBeNull();
      } finally {
        await database.drop();
      }
    });
  });
}
