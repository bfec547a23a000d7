import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { uuidV7Floor } from "../../src/lib/ids.ts";
import type { ExecutionSettlement } from "../../src/store/executions.ts";
import { openStore } from "../../src/store/open.ts";
import type { ExecutionRow, LogRow } from "../../src/store/rows.ts";
import type { Store } from "../../src/store/store.ts";
import { dialects, executeStatements, selectRows, type TestDatabase } from "../support/databases.ts";
import { row } from "../support/rows.ts";
import { at, T0 } from "./fixture.ts";

// Executions, their lines, lists and counts in two environments of one database, with colliding keys:
// nothing one environment writes may answer, or change, in the other (docs/decisions/hosting-layout.md).

const ENVIRONMENT_TWO = `insert into environments (id, handle, revision, updated_at, created_at, changed)
  values (2, 'two', 0, 0, 0, 0)`;

const settlement = (status: ExecutionSettlement["status"], output: unknown): ExecutionSettlement => ({
  status,
  output,
  errorCode: status === "failed" ? "boom" : null,
  errorMessage: status === "failed" ? "boom" : null,
  finishedAt: at(10),
});

const line = (executionId: string, seq: number, text: string): LogRow => ({
  executionId,
  seq,
  at: at(seq),
  level: "info",
  step: null,
  line: text,
});

const alice = { kind: "user", id: "alice" } as const;

for (const dialect of dialects) {
  describe(`executions in two environments (${dialect.name})`, () => {
    let database: TestDatabase;
    let store: Store;
    let one: Store;
    let two: Store;

    beforeEach(async () => {
      database = await dialect.create();
      store = await openStore(database.url);
      await executeStatements(database.url, ENVIRONMENT_TWO);
      one = store.environment(1);
      two = store.environment(2);
    });
    afterEach(async () => {
      await store.close();
      await database.drop();
    });

    /** The same (principal, requestId) claimed in both environments, in one turn (one group commit). */
    async function collidingClaims(overrides: Partial<ExecutionRow> = {}) {
      const requestId = crypto.randomUUID();
      const first = row({ requestId, createdAt: at(0), ...overrides });
      const second = row({ requestId, createdAt: at(0), action: "other.echo", ...overrides });
      const claims = await Promise.all([one.executions.claim(first), two.executions.claim(second)]);
      return { requestId, first, second, claims };
    }

    test("the same requestId is two executions; each environment reads only its own, by key and by id", async () => {
      const { requestId, first, second, claims } = await collidingClaims();
      expect(claims).toEqual([
        { row: first, created: true },
        { row: second, created: true },
      ]);
      expect(await one.executions.findByRequest(alice, requestId)).toEqual(first);
      expect(await two.executions.findByRequest(alice, requestId)).toEqual(second);
      expect(await one.executions.get(second.id)).toBeNull();
      expect(await two.executions.get(first.id)).toBeNull();
      expect(await one.executions.get(first.id)).toEqual(first);
      // Read together: each environment's own of the ids named, an unknown id nothing.
      expect(await one.executions.getMany([first.id, second.id, crypto.randomUUID()])).toEqual([first]);
      expect(await two.executions.getMany([first.id, second.id])).toEqual([second]);
      expect(await one.executions.getMany([])).toEqual([]);
      // A replay in each environment answers its own execution.
      expect(await two.executions.claim(row({ requestId }))).toEqual({ row: second, created: false });
      expect(await one.executions.claim(row({ requestId }))).toEqual({ row: first, created: false });
      const run = await two.executions.claimToRun(row({ requestId }));
      expect(run).toMatchObject({ row: second, created: false });
    });

    test("a settlement lands in its environment only; another environment's id is not stored there", async () => {
      const { requestId, first, second } = await collidingClaims();
      await expect(one.executions.settle(second.id, settlement("succeeded", 2))).rejects.toThrow(/not stored/);
      await two.executions.settle(second.id, settlement("failed", null));
      await one.executions.settle(first.id, settlement("succeeded", { from: "one" }));
      expect(await one.executions.get(first.id)).toMatchObject({ status: "succeeded", output: { from: "one" } });
      expect(await two.executions.get(second.id)).toMatchObject({ status: "failed", output: null });
      expect(await two.executions.findByRequest(alice, requestId)).toMatchObject({ status: "failed" });
    });

    test("a settlement's data writes are written in the settlement's environment", async () => {
      const { first, second } = await collidingClaims();
      const write = (label: string) => ({
        op: "insert" as const,
        entity: "contract",
        id: "same",
        doc: { label },
        at: T0,
      });
      const [inOne, inTwo] = await Promise.all([
        one.executions.settle(first.id, { ...settlement("succeeded", 1), writes: [write("one")] }),
        two.executions.settle(second.id, { ...settlement("succeeded", 2), writes: [write("two")] }),
      ]);
      // The same entity id in both: neither write collides with the other's.
      expect([inOne.status, inTwo.status]).toEqual(["succeeded", "succeeded"]);
      const stored = await selectRows(database.url, "select environment, id from data_entities order by environment");
      expect(stored.map((r) => [Number(r.environment), r.id])).toEqual([
        [1, "same"],
        [2, "same"],
      ]);
    });

    test("log lines are written and read in their execution's environment", async () => {
      const { first, second } = await collidingClaims();
      await Promise.all([
        one.executionLogs.append([line(first.id, 0, "one 0")]),
        two.executionLogs.append([line(second.id, 0, "two 0"), line(second.id, 1, "two 1")]),
      ]);
      await two.executions.settle(second.id, { ...settlement("succeeded", 1), logs: [line(second.id, 2, "two 2")] });
      expect((await two.executionLogs.page(second.id, -1, 10)).map((l) => l.line)).toEqual(["two 0", "two 1", "two 2"]);
      expect(await two.executionLogs.page(second.id, -1, 10)).toEqual([
        line(second.id, 0, "two 0"),
        line(second.id, 1, "two 1"),
        line(second.id, 2, "two 2"),
      ]);
      expect(await one.executionLogs.page(second.id, -1, 10)).toEqual([]);
      expect(await one.executionLogs.tally(second.id)).toEqual({ lines: 0, bytes: 0, nextSeq: 0 });
      expect(await two.executionLogs.tally(second.id)).toMatchObject({ lines: 3, nextSeq: 3 });
      expect(await two.executionLogs.page(first.id, -1, 10)).toEqual([]);
    });

    test("lists and counts are the environment's own, with or without a principal", async () => {
      const { first, second } = await collidingClaims();
      const bob = row({ principalId: "bob", createdAt: at(1) });
      await two.executions.claim(bob);
      await Promise.all([
        one.executions.settle(first.id, settlement("failed", null)),
        two.executions.settle(second.id, settlement("succeeded", 1)),
      ]);
      const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
      const all = { limit: 10, maxValueBytes: 1 << 20 };
      expect(ids(await one.executions.list(all))).toEqual([first.id]);
      expect(ids(await two.executions.list(all))).toEqual([bob.id, second.id]);
      expect(ids(await one.executions.list({ ...all, principal: alice }))).toEqual([first.id]);
      expect(ids(await two.executions.list({ ...all, principal: alice }))).toEqual([second.id]);
      expect(await one.executions.list({ ...all, principal: { kind: "user", id: "bob" } })).toEqual([]);
      const [listed] = await one.executions.list(all);
      expect(listed).not.toHaveProperty("environment");

      const since = uuidV7Floor(0);
      expect(await one.stats.executionsByStatus(since)).toEqual({ failed: 1 });
      expect(await two.stats.executionsByStatus(since)).toEqual({ succeeded: 1, running: 1 });
      expect(await one.stats.failingActions(since, 5)).toEqual([{ action: "test.echo", failed: 1 }]);
      expect(await two.stats.failingActions(since, 5)).toEqual([]);
    });

    test("lists and counts of runs are the environment's own", async () => {
      const ids = [Bun.randomUUIDv7(), Bun.randomUUIDv7(), Bun.randomUUIDv7()];
      const run = (environment: number, id: string, status: string) =>
        `insert into workflow_runs (environment, id, request_id, workflow, release_version, principal_kind, principal_id,
           input, status, wake_at, created_at, updated_at, input_bytes)
         values (${environment}, '${id}', '${crypto.randomUUID()}', 'w', 't1', 'user', 'alice', '{}',
           '${status}', 0, 0, 0, 2)`;
      const [inOne, inTwo, endedInTwo] = ids as [string, string, string];
      for (const statement of [run(1, inOne, "queued"), run(2, inTwo, "queued"), run(2, endedInTwo, "succeeded")]) {
        await executeStatements(database.url, statement);
      }
      const since = uuidV7Floor(0);
      expect(await one.stats.runsByStatus(since)).toEqual({ queued: 1 });
      expect(await two.stats.runsByStatus(since)).toEqual({ queued: 1, succeeded: 1 });
      // Environment 1's run reads (run stores are bound by their own work; their reads are these).
      const listed = await one.runs.list({ limit: 10, maxValueBytes: 1024 });
      expect(listed.map((r) => r.id)).toEqual([inOne]);
      expect(listed[0]).not.toHaveProperty("environment");
      expect(await one.runs.list({ limit: 10, maxValueBytes: 1024, principal: alice })).toHaveLength(1);
      expect(await one.runs.getBounded(inTwo, 1024)).toBeNull();
      expect(await one.runs.countActive()).toEqual({ queued: 1, running: 0, sleeping: 0 });
    });

    test("retention prunes its environment's ended executions; a pruned key is free again in its environment only", async () => {
      const { requestId, first, second } = await collidingClaims();
      await two.executions.settle(second.id, settlement("succeeded", 2));
      const kept = row({ requestId: crypto.randomUUID(), createdAt: at(0) });
      await one.executions.claim(kept);
      await one.executions.settle(kept.id, { ...settlement("succeeded", 3), finishedAt: at(1_000) });
      // first is still running: only env 2's ended execution is before the cut-off.
      expect(await store.retention.pruneFinished(at(100), 10, async () => {})).toBe(0);
      expect(await two.retention.pruneFinished(at(100), 10, async () => {})).toBe(1);
      expect(await two.executions.get(second.id)).toBeNull();
      expect(await one.executions.get(first.id)).toEqual(first);
      const again = row({ requestId });
      expect(await two.executions.claim(again)).toEqual({ row: again, created: true });
      expect(await one.executions.claim(row({ requestId }))).toEqual({ row: first, created: false });
      expect(await two.retention.pruneFinished(at(2_000), 10, async () => {})).toBe(0);
      expect(await store.retention.pruneFinished(at(2_000), 10, async () => {})).toBe(1);
      expect(await one.executions.get(kept.id)).toBeNull();
    });
  });
}
