import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import type { VariableRow } from "../../src/store/variables.ts";
import { dialects, executeStatements, selectRows } from "../support/databases.ts";

const plain = (name: string, value: string, at = 1): VariableRow => ({
  name,
  secret: false,
  value,
  keyId: null,
  updatedAt: at,
  updatedBy: "service:test",
});
const sealed = (name: string, value: string, keyId: string): VariableRow => ({
  ...plain(name, value),
  secret: true,
  keyId,
});

/**
 * The variable store on both databases: set (insert, replace), list by name, unset, environments apart,
 * every change bumping the environment's revision and the service-wide `changed` (what instances poll),
 * and the rotation's reads and compare-and-set writes across environments.
 */
for (const dialect of dialects) {
  describe(`variable store (${dialect.name})`, () => {
    let url: string;
    let store: Store;
    let close: () => Promise<void>;

    beforeEach(async () => {
      const database = await dialect.create();
      url = database.url;
      store = await openStore(url);
      await executeStatements(
        url,
        `insert into environments (id, handle, revision, updated_at, created_at, changed) values (2, 'two', 0, 0, 0, 0)`,
      );
      close = async () => {
        await store.close();
        await database.drop();
      };
    });
    afterEach(() => close());

    const environmentRow = async (id: number) => {
      const [row] = await selectRows(
        url,
        `select revision, changed, active_version, updated_at from environments where id = ${id}`,
      );
      return {
        revision: Number(row?.revision),
        changed: Number(row?.changed),
        activeVersion: row?.active_version ?? null,
        updatedAt: Number(row?.updated_at),
      };
    };

    test("set inserts then replaces, list is by name, unset removes", async () => {
      expect(await store.variables.list()).toEqual([]);
      expect(await store.variables.set(plain("REGION", "eu"))).toEqual({ created: true });
      expect(await store.variables.set(plain("API_URL", "https://a.example"))).toEqual({ created: true });
      expect(await store.variables.set(plain("REGION", "us", 2))).toEqual({ created: false });
      expect((await store.variables.list()).map((v) => [v.name, v.value, v.updatedAt])).toEqual([
        ["API_URL", "https://a.example", 1],
        ["REGION", "us", 2],
      ]);
      expect(await store.variables.get("REGION")).toEqual(plain("REGION", "us", 2));
      expect(await store.variables.unset("REGION")).toBe(true);
      expect(await store.variables.unset("REGION")).toBe(false);
      expect(await store.variables.get("REGION")).toBeNull();
      expect((await store.variables.list()).map((v) => v.name)).toEqual(["API_URL"]);
    });

    test("each set and unset bumps the environment's revision and the service's changed, nothing else", async () => {
      const before = await environmentRow(1);
      await store.variables.set(plain("REGION", "eu"));
      const afterSet = await environmentRow(1);
      expect(afterSet.revision).toBe(before.revision + 1);
      expect(afterSet.changed).toBeGreaterThan(Math.max(before.changed, (await environmentRow(2)).changed));
      expect(afterSet.activeVersion).toBe(before.activeVersion);
      expect(afterSet.updatedAt).toBe(before.updatedAt);
      expect((await store.releases.active()).revision).toBe(afterSet.revision);
      // What every instance polls sees it.
      const changed = await store.control.environments.changedSince(before.changed);
      expect(changed.map((e) => e.id)).toContain(1);

      await store.variables.unset("REGION");
      expect((await environmentRow(1)).revision).toBe(before.revision + 2);
      // Unsetting what is not set changes nothing.
      await store.variables.unset("REGION");
      expect((await environmentRow(1)).revision).toBe(before.revision + 2);
      expect((await environmentRow(2)).revision).toBe(0);
    });

    test("environments are apart: same names, different values, unset in one leaves the other", async () => {
      const two = store.environment(2);
      await store.variables.set(plain("REGION", "eu"));
      await two.variables.set(plain("REGION", "us"));
      expect((await store.variables.get("REGION"))?.value).toBe("eu");
      expect((await two.variables.get("REGION"))?.value).toBe("us");
      expect(await two.variables.unset("REGION")).toBe(true);
      expect((await store.variables.get("REGION"))?.value).toBe("eu");
      expect(await two.variables.list()).toEqual([]);
      expect((await environmentRow(2)).revision).toBe(2);
    });

    test("rotation reads secrets not under a key, across environments, and reseals only unchanged ones", async () => {
      const two = store.environment(2);
      await store.variables.set(sealed("A_KEY", "v1.old.a.a", "old"));
      await store.variables.set(plain("PLAIN", "x"));
      await two.variables.set(sealed("B_KEY", "v1.old.b.b", "old"));
      await two.variables.set(sealed("C_KEY", "v1.new.c.c", "new"));
      const under = await store.variables.sealedUnder("new", 10);
      expect(under).toEqual([
        { environment: 1, name: "A_KEY", value: "v1.old.a.a", keyId: "old" },
        { environment: 2, name: "B_KEY", value: "v1.old.b.b", keyId: "old" },
      ]);
      expect(await store.variables.sealedUnder("new", 1)).toHaveLength(1);
      // B_KEY is set again meanwhile: its new value stands.
      await two.variables.set(sealed("B_KEY", "v1.new.b2.b2", "new"));
      const written = await store.variables.reseal(
        under.map((row) => ({ ...row, from: row.value, value: `v1.new.${row.name}`, keyId: "new" })),
      );
      expect(written).toBe(1);
      expect((await store.variables.get("A_KEY"))?.value).toBe("v1.new.A_KEY");
      expect((await two.variables.get("B_KEY"))?.value).toBe("v1.new.b2.b2");
      expect(await store.variables.sealedUnder("new", 10)).toEqual([]);
    });

    test("deleting an environment removes its variables, not another's", async () => {
      const two = store.environment(2);
      await store.variables.set(plain("REGION", "eu"));
      await two.variables.set(plain("REGION", "us"));
      expect((await store.control.environments.describeDelete(2))?.variables).toBe(1);
      const removed = await store.control.environments.delete(2, async () => {});
      expect(removed?.variables).toBe(1);
      expect(await selectRows(url, "select name from variables where environment = 2")).toEqual([]);
      expect((await store.variables.get("REGION"))?.value).toBe("eu");
    });
  });
}
