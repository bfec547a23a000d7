import { describe, expect, test } from "bun:test";
import { openStore } from "../../src/store/open.ts";
import { dialects, runStatement, selectRows } from "../support/databases.ts";
import { migrateToBefore } from "../support/migrations.ts";

const TAG = "oauth_secret_ids_hashed";

const row = (model: string, id: string) =>
  `('${model}', '${id}', '{"jti":"${id}"}', ${model === "Grant" || model === "Client" ? "null" : "'g1'"})`;

for (const dialect of dialects) {
  describe(`migration ${TAG} (${dialect.name})`, () => {
    test("the authority's records written in clear (tokens, codes, sessions, their grants) are gone; clients and keys stay", async () => {
      const database = await dialect.create();
      try {
        await migrateToBefore(TAG, dialect.name === "sqlite" ? "sqlite" : "pg", database.url);
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
