import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/types.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";
import { row } from "../support/rows.ts";

for (const dialect of dialects) {
  describe(`store (${dialect.name})`, () => {
    let database: TestDatabase;
    let store: Store;
    beforeAll(async () => {
      database = await dialect.create();
      store = await openStore(database.url);
    });
    afterAll(async () => {
      await store.close();
      await database.drop();
    });

    test("a (principal, requestId) is claimed once; the claim is readable before and after it ends", async () => {
      const first = row();
      const claimed = await store.claimExecution(first);
      expect(claimed.created).toBe(true);
      const again = await store.claimExecution(row({ requestId: first.requestId }));
      expect(again).toEqual({ row: expect.objectContaining({ id: first.id, status: "running" }), created: false });
      const otherCaller = await store.claimExecution(row({ requestId: first.requestId, principalId: "bob" }));
      expect(otherCaller.created).toBe(true);

      await store.settleExecution(first.id, {
        status: "succeeded",
        output: { ok: true },
        errorCode: null,
        errorMessage: null,
        finishedAt: Date.now(),
      });
      const stored = await store.getExecution(first.id);
      expect(stored).toMatchObject({ status: "succeeded", output: { ok: true }, input: first.input });
      expect(await store.findExecutionByRequest({ kind: "user", id: "alice" }, first.requestId)).toMatchObject({
        id: first.id,
      });
      expect(await store.findExecutionByRequest({ kind: "user", id: "carol" }, first.requestId)).toBeNull();
    });

    test("many claims and settles issued together all land, each exactly once", async () => {
      const rows = Array.from({ length: 40 }, () => row({ principalId: "batch" }));
      const claims = await Promise.all(rows.map((r) => store.claimExecution(r)));
      expect(claims.every((c) => c.created)).toBe(true);
      await Promise.all(
        rows.map((r, i) =>
          store.settleExecution(r.id, {
            status: i % 2 ? "failed" : "succeeded",
            output: i % 2 ? null : { i },
            errorCode: i % 2 ? "action_failed" : null,
            errorMessage: i % 2 ? `no ${i}` : null,
            finishedAt: Date.now(),
          }),
        ),
      );
      const listed = await store.listExecutions({
        principal: { kind: "user", id: "batch" },
        limit: 100,
        maxValueBytes: 4096,
      });
      expect(listed.map((e) => e.id)).toEqual(rows.map((r) => r.id).reverse());
      expect(listed.filter((e) => e.status === "failed").length).toBe(20);
    });

    test("settling an execution that was never stored fails loudly", async () => {
      await expect(
        store.settleExecution(Bun.randomUUIDv7(), {
          status: "succeeded",
          output: {},
          errorCode: null,
          errorMessage: null,
          finishedAt: 1,
        }),
      ).rejects.toThrow();
    });
  });
}
