import { describe, expect, test } from "bun:test";
import type { Store } from "../../src/store/store.ts";
import { row } from "../support/rows.ts";
import { at, type OpenStores, runRows, stepRow, storesPerTest } from "./fixture.ts";

const ended = (finishedAt: number) =>
  ({ status: "succeeded", output: null, errorCode: null, errorMessage: null, finishedAt }) as const;

/** What every dialect's retention store promises (run by test/store/contracts.test.ts). */
export function retentionStoreContract(open: OpenStores) {
  let store: Store;
  let peer: Store;
  storesPerTest(open, (opened) => {
    ({ store, peer } = opened);
    dropped.paths = [];
  });
  /** Where the uploads' bytes would be deleted: the paths handed over. */
  const dropped = {
    paths: [] as string[],
    collect: async (paths: string[]) => {
      dropped.paths.push(...paths);
    },
  };

  /** A function execution that ended at `finishedAt` (null: still running), with a log line and an upload. */
  async function execution(finishedAt: number | null): Promise<string> {
    const r = row({ createdAt: at(0), startedAt: at(0) });
    await store.executions.claim(r);
    const line = { executionId: r.id, seq: 0, at: at(0), level: "info", step: null, line: "hi" } as const;
    await store.executionLogs.append([line]);
    await store.files.put({
      path: `uploads/${r.id}/doc`,
      contentType: "text/plain",
      size: 2,
      sha256: "a".repeat(64),
      ownerKind: "user",
      ownerId: "alice",
      createdAt: at(0),
      updatedAt: at(0),
      executionId: r.id,
      field: "doc",
      filename: "doc.txt",
    });
    if (finishedAt !== null) await store.executions.settle(r.id, ended(finishedAt));
    return r.id;
  }

  const kept = async (id: string) => ({
    execution: (await store.executions.get(id)) !== null,
    logs: (await store.executionLogs.page(id, -1, 10)).length,
    uploads: (await store.files.uploadsOf([id])).length,
  });

  describe("retention.pruneFinished", () => {
    test("deletes executions that ended before the cut-off with their lines and upload records; keeps the rest", async () => {
      const old = await execution(at(10));
      const recent = await execution(at(1_000));
      const running = await execution(null);
      expect(await peer.retention.pruneFinished(at(500), 100, dropped.collect)).toBe(1);
      expect(await kept(old)).toEqual({ execution: false, logs: 0, uploads: 0 });
      expect(await kept(recent)).toEqual({ execution: true, logs: 1, uploads: 1 });
      expect(await kept(running)).toEqual({ execution: true, logs: 1, uploads: 1 });
      expect(await peer.retention.pruneFinished(at(500), 100, dropped.collect)).toBe(0);
      expect(dropped.paths).toEqual([`uploads/${old}/doc`]);
    });

    test("hands the uploads' paths over before their records go; when that fails, the batch is left whole", async () => {
      const old = await execution(at(10));
      const failing = async (paths: string[]) => {
        expect(await kept(old)).toEqual({ execution: true, logs: 1, uploads: 1 });
        throw new Error(`the store of ${paths.length} file(s) is down`);
      };
      await expect(peer.retention.pruneFinished(at(500), 100, failing)).rejects.toThrow("is down");
      expect(await kept(old)).toEqual({ execution: true, logs: 1, uploads: 1 });
      expect(await peer.retention.pruneFinished(at(500), 100, dropped.collect)).toBe(1);
      expect(dropped.paths).toEqual([`uploads/${old}/doc`]);
      expect(await kept(old)).toEqual({ execution: false, logs: 0, uploads: 0 });
    });

    test("a pruned execution's requestId is free again: a new claim of it creates a new execution", async () => {
      const old = (await store.executions.get(await execution(at(10)))) as NonNullable<
        Awaited<ReturnType<Store["executions"]["get"]>>
      >;
      expect(await peer.retention.pruneFinished(at(500), 100, dropped.collect)).toBe(1);
      const alice = { kind: "user", id: "alice" } as const;
      expect(await store.executions.findByRequest(alice, old.requestId)).toBeNull();
      const again = row({ requestId: old.requestId });
      expect(await store.executions.claim(again)).toEqual({ row: again, created: true });
      await store.executions.settle(again.id, ended(at(600)));
      expect(await peer.executions.findByRequest(alice, old.requestId)).toMatchObject({ id: again.id });
    });

    test("goes in batches of at most `limit`, oldest first", async () => {
      const ids = [];
      for (let i = 0; i < 5; i++) ids.push(await execution(at(10 + i)));
      expect(await store.retention.pruneFinished(at(500), 2, dropped.collect)).toBe(2);
      expect((await Promise.all(ids.map(kept))).map((k) => k.execution)).toEqual([false, false, true, true, true]);
      expect(await store.retention.pruneFinished(at(500), 2, dropped.collect)).toBe(2);
      expect(await store.retention.pruneFinished(at(500), 2, dropped.collect)).toBe(1);
      expect(await store.retention.pruneFinished(at(500), 2, dropped.collect)).toBe(0);
    });

    test("a workflow's run and steps go with its execution once the run ended, never before", async () => {
      const lease = { owner: "A", until: at(10_000) };
      const finishedRun = runRows({ now: at(0), lease });
      const openRun = runRows({ now: at(0), lease });
      for (const { execution, run } of [finishedRun, openRun]) {
        await store.runs.admit(execution, run);
        expect(await store.runs.saveStep("A", stepRow(run.id))).toEqual({ saved: true });
      }
      expect(await store.runs.finish("A", finishedRun.run.id, ended(at(20)))).toEqual({ saved: true });
      expect(await store.retention.pruneFinished(at(500), 100, dropped.collect)).toBe(1);
      expect(await store.runs.get(finishedRun.run.id)).toBeNull();
      expect(await store.runs.steps(finishedRun.run.id)).toEqual([]);
      expect(await store.executions.get(finishedRun.execution.id)).toBeNull();
      expect(await store.runs.get(openRun.run.id)).toMatchObject({ status: "running" });
      expect(await store.runs.steps(openRun.run.id)).toHaveLength(1);
      expect(await store.executions.get(openRun.execution.id)).not.toBeNull();
    });
  });
}
