import { describe, expect, test } from "bun:test";
import { openStore } from "../../src/store/open.ts";
import { dialects, executeStatements, selectRows } from "../support/databases.ts";
import { migrateToBefore } from "../support/migrations.ts";

const title = { entity: "notes", label: "title", type: "string" as const, unique: true };

/**
 * An attribute index made before environments was on the attribute alone (a unique one: unique across
 * every environment). PostgreSQL's migration keeps it, SQLite's drops it with the table it copies; either
 * way the next `ensureIndexes` leaves the keyed one only, unique within each environment.
 */
for (const dialect of dialects) {
  describe(`attribute indexes made before environments (${dialect.name})`, () => {
    test("ensureIndexes replaces an unkeyed index with one keyed by the environment", async () => {
      const database = await dialect.create();
      const sql = (statements: string) => executeStatements(database.url, statements);
      try {
        await migrateToBefore("environments", dialect.name === "postgres" ? "pg" : "sqlite", database.url);
        const expr = dialect.name === "postgres" ? "((doc->>'title'))" : "json_extract(doc, '$.title')";
        await sql(`
          create unique index data_idx_notes_title on data_entities (${expr}) where entity = 'notes';
          insert into data_entities (id, entity, doc, created_at, updated_at) values ('n1', 'notes', '{"title":"same"}', 1, 1);`);
        const store = await openStore(database.url);
        try {
          await sql(`insert into environments (id, handle, revision, updated_at, created_at, changed)
            values (2, 'two', 0, 0, 0, 0)`);
          await store.environment(2).data.ensureIndexes([title]);
          const names = await selectRows(
            database.url,
            dialect.name === "postgres"
              ? "select indexname as name from pg_indexes where indexname like 'data_i%' order by 1"
              : "select name from sqlite_master where type = 'index' and name like 'data_i%' order by 1",
          );
          expect(names.map((row) => row.name)).toEqual(["data_ix_notes_title"]);
          const insert = (environment: number, id: string) =>
            sql(`insert into data_entities (environment, id, entity, doc, created_at, updated_at)
              values (${environment}, '${id}', 'notes', '{"title":"same"}', 2, 2)`);
          await insert(2, "n2");
          await expect(insert(2, "n3")).rejects.toThrow();
          await expect(insert(1, "n4")).rejects.toThrow();
        } finally {
          await store.close();
        }
      } finally {
        await database.drop();
      }
    });
  });
}
