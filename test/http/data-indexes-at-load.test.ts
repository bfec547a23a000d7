import { afterEach, describe, expect, test } from "bun:test";
import { dialects, runStatement, selectRows } from "../support/databases.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

/** The data indexes the database holds (data_ix_<entity>_<label>, made from the release's indexed attributes). */
async function dataIndexes(url: string, sqlite: boolean): Promise<string[]> {
  const rows = await selectRows(
    url,
    sqlite
      ? "select name from sqlite_master where type = 'index' and name like 'data_ix_%' order by name"
      : "select indexname as name from pg_indexes where indexname like 'data_ix_%' order by indexname",
  );
  return rows.map((row) => String(row.name));
}

for (const dialect of dialects) {
  describe(`data indexes when a server loads its release (${dialect.name})`, () => {
    let t: TestServer | null = null;
    afterEach(async () => {
      await t?.stop();
      t = null;
    });

    test("an index the database lost (a migration rebuilt the table) is made again when the active release loads", async () => {
      t = await startTestServer(dialect, { release: fixture("console-data") });
      const url = t.config.databaseUrl;
      const sqlite = dialect.name === "sqlite";
      const made = await dataIndexes(url, sqlite);
      expect(made.length).toBeGreaterThan(0);
      for (const name of made) await runStatement(url, `drop index ${name}`);
      expect(await dataIndexes(url, sqlite)).toEqual([]);

      await t.restart();
      expect(await dataIndexes(url, sqlite)).toEqual(made);
      // A query ordered by an indexed attribute reads through its index (SQLite names it in the query).
      const answer = await t.fetch("/query?format=objects", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: { notes: { $: { order: { priority: "asc" }, limit: 5 } } } }),
      });
      expect(answer.status).toBe(200);
      expect((await answer.json()).notes).toEqual([]);
    }, 60_000);
  });
}
