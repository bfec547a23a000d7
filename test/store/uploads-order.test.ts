import { expect, test } from "bun:test";
import { openStore } from "../../src/store/open.ts";
import type { FileRow } from "../../src/store/rows.ts";
import { dialects, executeStatements } from "../support/databases.ts";

for (const dialect of dialects) {
  test(`an execution's uploads are listed in one order whatever the database's collation (${dialect.name})`, async () => {
    const database = await dialect.create();
    const store = await openStore(database.url);
    try {
      if (dialect.name === "postgres") {
        // As in a database made with an en_US locale: its collation orders `photo_a` before `photoB`.
        await executeStatements(database.url, `alter table files alter column field type text collate "en-x-icu"`);
      }
      const executionId = crypto.randomUUID();
      const upload = (field: string): FileRow => ({
        path: `executions/${executionId}/${field}/p.png`,
        contentType: "image/png",
        size: 1,
        sha256: "0".repeat(64),
        ownerKind: "service",
        ownerId: "key",
        createdAt: 1,
        updatedAt: 1,
        executionId,
        field,
        filename: "p.png",
        blobEnvironment: null,
      });
      await store.files.put(upload("photo_a"));
      await store.files.put(upload("photoB"));
      // The order the invoke's own answer gives them (files/service.ts): JavaScript's string order.
      expect((await store.files.uploadsOf([executionId])).map((row) => row.field)).toEqual(["photoB", "photo_a"]);
    } finally {
      await store.close();
      await database.drop();
    }
  }, 30_000);
}
