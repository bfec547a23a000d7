import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { QueryNode } from "../../src/store/data.ts";
import { rootsStatement } from "../../src/store/data-sql.ts";
import { openStore } from "../../src/store/open.ts";
import { postgresDialect } from "../../src/store/pg/dialect.ts";
import { sqliteDialect } from "../../src/store/sqlite/dialect.ts";

const priority = { label: "priority", type: "number" as const, optional: false, indexed: true };
const top = (by: typeof priority, limit?: number): QueryNode => ({
  entity: "notes",
  where: null,
  order: { by, direction: "desc" },
  limit,
  children: [],
});

describe("SQLite plans of the data store", () => {
  test("the first rows by an indexed, required attribute read its index: no sort of every row", async () => {
    const dir = mkdtempSync(join(tmpdir(), "actuate-plans-"));
    try {
      const store = await openStore(`sqlite:${join(dir, "plans.db")}`);
      await store.data.ensureIndexes([{ entity: "notes", label: "priority", type: "number", unique: false }]);
      await store.close();
      const db = new Database(join(dir, "plans.db"));
      const plan = (node: QueryNode) => {
        const { sql, params } = rootsStatement(node, sqliteDialect, 2);
        return (db.query(`explain query plan ${sql}`).all(...(params as never[])) as { detail: string }[])
          .map((row) => row.detail)
          .join("; ");
      };
      // Keyed by the environment first: one index for every environment, each reading its own range.
      expect(plan(top(priority, 20))).toContain("data_ix_notes_priority (environment=?)");
      // Ties keep creation order, sorted within each priority as the scan goes (no sort of the whole entity).
      expect(plan(top(priority, 20))).not.toContain("TEMP B-TREE FOR ORDER BY");
      // An equality on the attribute reads its index; the default order reads the entities' own index.
      const equal = { kind: "compare", on: priority, op: "=", value: 3 } as const;
      expect(plan({ ...top(priority, 20), order: undefined, where: equal })).toContain(
        "data_ix_notes_priority (environment=? AND <expr>=?)",
      );
      expect(plan({ ...top(priority, 20), order: undefined })).toContain(
        "data_entities_entity_idx (environment=? AND entity=?)",
      );
      expect(plan({ ...top(priority, 20), order: undefined })).not.toContain("TEMP B-TREE");
      // Not forced where the attribute has no index, may be absent, or every row is read anyway.
      expect(rootsStatement(top({ ...priority, indexed: false }, 20), sqliteDialect, 1).sql).not.toContain(
        "indexed by",
      );
      expect(rootsStatement(top({ ...priority, optional: true }, 20), sqliteDialect, 1).sql).not.toContain(
        "indexed by",
      );
      expect(rootsStatement(top(priority), sqliteDialect, 1).sql).not.toContain("indexed by");
      // PostgreSQL's planner needs no hint.
      expect(rootsStatement(top(priority, 20), postgresDialect, 1).sql).not.toContain("indexed by");
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
