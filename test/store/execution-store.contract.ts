import { describe, expect, test } from "bun:test";
import type { ExecutionFilter, ExecutionSettlement } from "../../src/store/executions.ts";
import type { Store } from "../../src/store/store.ts";
import { row } from "../support/rows.ts";
import { at, dataWrites, type OpenStores, storesPerTest } from "./fixture.ts";

const succeeded = (output: unknown, finishedAt = at(10)): ExecutionSettlement => ({
  status: "succeeded",
  output,
  errorCode: null,
  errorMessage: null,
  finishedAt,
});

const canceled: ExecutionSettlement = {
  status: "canceled",
  output: null,
  errorCode: "canceled",
  errorMessage: "canceled",
  finishedAt: at(10),
};

/**
 * What every ExecutionStore promises (src/store/executions.ts), whatever the dialect: run by
 * test/store/contracts.test.ts, with times from a fake clock (`at`).
 */
export function executionStoreContract(open: OpenStores) {
  let store: Store;
  let peer: Store;
  storesPerTest(open, (opened) => {
    ({ store, peer } = opened);
  });

  describe("executions.claim", () => {
    test("a (principal, requestId) is claimed once: a second claim answers the stored row, created false", async () => {
      const first = row({ createdAt: at(0), startedAt: at(0) });
      expect(await store.executions.claim(first)).toEqual({ row: first, created: true });
      const again = await peer.executions.claim(row({ requestId: first.requestId, input: { other: true } }));
      expect(again).toEqual({ row: first, created: false });
      const otherCaller = await store.executions.claim(row({ requestId: first.requestId, principalId: "bob" }));
      expect(otherCaller.created).toBe(true);
      expect(await store.executions.get(first.id)).toEqual(first);
    });

    test("concurrent claims of one key on every instance: one is created, all name the same execution", async () => {
      const requestId = crypto.randomUUID();
      const claims = await Promise.all(
        Array.from({ length: 30 }, (_, i) => (i % 2 ? peer : store).executions.claim(row({ requestId }))),
      );
      expect(claims.filter((c) => c.created)).toHaveLength(1);
      expect(new Set(claims.map((c) => c.row.id)).size).toBe(1);
      expect(await peer.executions.findByRequest({ kind: "user", id: "alice" }, requestId)).toMatchObject({
        id: claims[0]?.row.id,
      });
    });
  });

  describe("reading", () => {
    test("finds an execution by id and by its caller's key; unknown ones answer null", async () => {
      const first = row();
      await store.executions.claim(first);
      // toMatchObject: PostgreSQL's answer also names the instance running it (the execution writer's column).
      expect(await store.executions.findByRequest({ kind: "user", id: "alice" }, first.requestId)).toMatchObject(first);
      expect(await store.executions.findByRequest({ kind: "user", id: "carol" }, first.requestId)).toBeNull();
      expect(await store.executions.findByRequest({ kind: "service", id: "alice" }, first.requestId)).toBeNull();
      expect(await store.executions.get(Bun.randomUUIDv7())).toBeNull();
    });

    test("lists settled executions newest first, filtered by caller, action and status, paged by id", async () => {
      const [alices, other, bobs, last] = [row(), row({ action: "test.other" }), row({ principalId: "bob" }), row()];
      const ids = [alices.id, other.id, bobs.id, last.id];
      for (const r of [alices, other, bobs, last]) await store.executions.claim(r);
      // Settled, so listed on every dialect: SQLite commits a claim with the next group commit (sqlite/execution-writer.ts).
      await Promise.all(ids.map((id) => store.executions.settle(id, id === last.id ? canceled : succeeded(null))));
      const listed = async (filter: Partial<ExecutionFilter>) =>
        (await store.executions.list({ limit: 10, maxValueBytes: 4096, ...filter })).map((r) => r.id);
      expect(await listed({})).toEqual([...ids].reverse());
      expect(await listed({ principal: { kind: "user", id: "bob" } })).toEqual([bobs.id]);
      expect(await listed({ action: "test.other" })).toEqual([other.id]);
      expect(await listed({ status: "canceled" })).toEqual([last.id]);
      expect(await listed({ beforeId: bobs.id, limit: 1 })).toEqual([other.id]);
    });
  });

  describe("executions.list bounds", () => {
    test("values over maxValueBytes stay in the database: null in the row, their stored size beside", async () => {
      const big = "x".repeat(5_000);
      const large = row({ input: { text: big } });
      const small = row({ input: { text: "s" } });
      for (const r of [large, small]) await store.executions.claim(r);
      await store.executions.settle(large.id, {
        status: "failed",
        output: null,
        errorCode: "action_failed",
        errorMessage: big,
        finishedAt: at(1),
      });
      await store.executions.settle(small.id, succeeded({ text: "s" }));
      const rows = await store.executions.list({ limit: 10, maxValueBytes: 4096 });
      const byId = new Map(rows.map((r) => [r.id, r]));
      expect(byId.get(large.id)).toMatchObject({ input: null, errorMessage: null, outputBytes: 0 });
      expect(byId.get(large.id)?.inputBytes).toBeGreaterThan(5_000);
      expect(byId.get(large.id)?.errorMessageBytes).toBe(5_000);
      expect(byId.get(small.id)).toMatchObject({ input: { text: "s" }, output: { text: "s" }, errorMessageBytes: 0 });
      expect((await store.executions.get(large.id))?.input).toEqual({ text: big });
    });

    test("the sizes are those of the values as written, by a claim, a settlement or a settlement with writes", async () => {
      const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));
      const input = { text: "ü".repeat(3_000) };
      const output = { text: "€".repeat(2_000), list: [1, 2] };
      const mergedIntoClaim = row({ input });
      await store.executions.claim(mergedIntoClaim);
      await store.executions.settle(mergedIntoClaim.id, succeeded(output));
      const settledLater = row({ input });
      await (await store.executions.claimToRun(settledLater)).committed;
      await store.executions.settle(settledLater.id, succeeded(output));
      const withWrites = row({ input });
      await (await store.executions.claimToRun(withWrites)).committed;
      await store.executions.settle(withWrites.id, {
        ...succeeded(output),
        writes: [dataWrites(store).insertLabel("sized")],
      });
      const rows = await store.executions.list({ limit: 10, maxValueBytes: 100_000 });
      expect(rows).toHaveLength(3);
      for (const listed of rows) {
        expect(listed).toMatchObject({ input, output, inputBytes: jsonBytes(input), outputBytes: jsonBytes(output) });
      }
    });

    test("no output is sized 0 however the execution was settled, with data writes too", async () => {
      const plain = row();
      const withWrites = row();
      for (const r of [plain, withWrites]) await (await store.executions.claimToRun(r)).committed;
      await store.executions.settle(plain.id, succeeded(null));
      await store.executions.settle(withWrites.id, {
        ...succeeded(null),
        writes: [dataWrites(store).insertLabel("no output")],
      });
      const rows = await store.executions.list({ limit: 10, maxValueBytes: 4096 });
      expect(rows).toHaveLength(2);
      for (const listed of rows) expect(listed).toMatchObject({ status: "succeeded", output: null, outputBytes: 0 });
      expect((await store.executions.get(withWrites.id))?.output).toBeNull();
    });

    test("values are read in LISTED_VALUES order up to the first large one: an input after a large output stays out too", async () => {
      const small = { text: "s" };
      const largeOutput = row({ input: small });
      const largeError = row({ input: small });
      for (const r of [largeOutput, largeError]) await store.executions.claim(r);
      await store.executions.settle(largeOutput.id, succeeded({ text: "x".repeat(5_000) }));
      await store.executions.settle(largeError.id, {
        status: "failed",
        output: null,
        errorCode: "action_failed",
        errorMessage: "e".repeat(5_000),
        finishedAt: at(1),
      });
      const rows = await store.executions.list({ limit: 10, maxValueBytes: 4096 });
      const byId = new Map(rows.map((r) => [r.id, r]));
      const inputBytes = Buffer.byteLength(JSON.stringify(small));
      expect(byId.get(largeOutput.id)).toMatchObject({ output: null, input: null, inputBytes, errorMessageBytes: 0 });
      expect(byId.get(largeError.id)).toMatchObject({ errorMessage: null, input: null, inputBytes, outputBytes: 0 });
      expect((await store.executions.get(largeOutput.id))?.input).toEqual(small);
    });
  });

  describe("executions.settle", () => {
    test("stores the final status; many settles issued together each land once", async () => {
      const rows = Array.from({ length: 20 }, () => row());
      await Promise.all(rows.map((r) => store.executions.claim(r)));
      await Promise.all(
        rows.map((r, i) =>
          store.executions.settle(
            r.id,
            i % 2
              ? {
                  status: "failed",
                  output: null,
                  errorCode: "action_failed",
                  errorMessage: `no ${i}`,
                  finishedAt: at(i),
                }
              : succeeded({ i }, at(i)),
          ),
        ),
      );
      const stored = await store.executions.list({ limit: 100, maxValueBytes: 4096 });
      expect(stored.filter((e) => e.status === "failed")).toHaveLength(10);
      expect(await store.executions.get(rows[4]?.id as string)).toMatchObject({
        status: "succeeded",
        output: { i: 4 },
        finishedAt: at(4),
      });
    });

    test("the data writes commit with the status", async () => {
      const execution = row();
      await store.executions.claim(execution);
      const data = dataWrites(store);
      const settled = await store.executions.settle(execution.id, {
        ...succeeded({ ok: true }),
        writes: [data.insertLabel("kept")],
      });
      expect(settled).toEqual(succeeded({ ok: true }));
      expect(await store.executions.get(execution.id)).toMatchObject({ status: "succeeded", output: { ok: true } });
      expect(await data.labels()).toEqual(["kept"]);
    });

    test("writes the data refuses are all dropped, and the execution is stored failed with the reason", async () => {
      const data = dataWrites(store);
      const gone = row();
      await store.executions.claim(gone);
      const settled = await store.executions.settle(gone.id, {
        ...succeeded({ ok: true }),
        writes: [data.insertLabel("half"), data.renameMissing()],
      });
      const failed = { status: "failed", output: null, errorCode: "action_failed", finishedAt: at(10) };
      expect(settled).toMatchObject({ ...failed, errorMessage: data.gone });
      expect(await store.executions.get(gone.id)).toMatchObject({ ...failed, errorMessage: data.gone });

      const duplicate = row();
      await store.executions.claim(duplicate);
      await store.executions.settle(duplicate.id, {
        ...succeeded(null),
        writes: [data.insertLabel("twice"), data.insertLabel("twice")],
      });
      expect(await store.executions.get(duplicate.id)).toMatchObject({
        ...failed,
        errorMessage: expect.stringContaining("the writes could not be stored"),
      });
      expect(await data.labels()).toEqual([]);
    });

    test("settling an execution that was never stored fails loudly", async () => {
      await expect(store.executions.settle(Bun.randomUUIDv7(), succeeded({}))).rejects.toThrow();
    });
  });
}
