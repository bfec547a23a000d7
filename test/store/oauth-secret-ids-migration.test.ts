import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { drizzle as sqliteDrizzle } from "drizzle-orm/bun-sqlite";
import { drizzle as pgDrizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { readMigrations } from "../../src/store/migrations.ts";
import { openStore } from "../../src/store/open.ts";
import { dialects, runStatement, selectRows } from "../support/databases.ts";

const TAG = "oauth_secret_ids_hashed";

interface Migrator {
  dialect: { migrate(migrations: unknown, session: unknown, config?: unknown): unknown };
  session: unknown;
}

/** The database at `url` as the release before this migration left it: the migrations before this one applied. */
async function migrateToBefore(dialect: "sqlite" | "pg", url: string) {
  const journal = JSON.parse(
    readFileSync(join(import.meta.dir, "../../drizzle", dialect, "meta/_journal.json"), "utf8"),
  ) as { entries: { tag: string; when: number }[] };
  const mine = journal.entries.find((e) => e.tag.endsWith(TAG));
  if (!mine) throw new Error(`no migration ${TAG} in drizzle/${dialect}`);
  const before = readMigrations(dialect).filter((m) => m.folderMillis < mine.when);
  if (dialect === "sqlite") {
    const client = new Database(url.replace(/^sqlite:/, ""), { create: true });
    const db = sqliteDrizzle({ client }) as unknown as Migrator;
    db.dialect.migrate(before, db.session);
    client.close();
    return;
  }
  const client = postgres(url, { max: 1, onnotice: () => {} });
  const db = pgDrizzle({ client }) as unknown as Migrator;
  await db.dialect.migrate(before, db.session, { migrationsFolder: "drizzle/pg" });
  await client.end();
}

const row = (model: string, id: string) =>
  `('${model}', '${id}', '{"jti":"${id}"}', ${model === "Grant" || model === "Client" ? "null" : "'g1'"})`;

for (const dialect of dialects) {
  describe(`migration ${TAG} (${dialect.name})`, () => {
    test("the authority's records written in clear (tokens, codes, sessions, their grants) are gone; clients and keys stay", async () => {
      const database = await dialect.create();
      try {
        await migrateToBefore(dialect.name === "sqlite" ? "sqlite" : "pg", database.url);
        const models = [
          "AccessToken",
          "AuthorizationCode",
          "RefreshToken",
          "RegistrationAccessToken",
          "Session",
          "Interaction",
          "Grant",
          "Client",
          "AuthorityKeys",
        ];
        await runStatement(
          database.url,
          `insert into oauth_records (model, id, payload, grant_id) values ${models.map((m) => row(m, `${m}-in-clear`)).join(", ")}`,
        );
        const store = await openStore(database.url);
        await store.close();
        const left = await selectRows(database.url, "select model, id from oauth_records order by model");
        expect(left).toEqual([
          { model: "AuthorityKeys", id: "AuthorityKeys-in-clear" },
          { model: "Client", id: "Client-in-clear" },
        ]);
      } finally {
        await database.drop();
      }
    }, 60_000);
  });
}
