import { describe, expect, test } from "bun:test";
import type { ExecutionSettlement } from "../../src/store/executions.ts";
import type { ExecutionRow, LogRow } from "../../src/store/rows.ts";
import type { Store } from "../../src/store/store.ts";
import { row } from "../support/rows.ts";
import { at, dataWrites, type OpenStores, storesPerTest } from "./fixture.ts";

const line = (executionId: string, seq: number, text = `line ${seq}`, step: string | null = null): LogRow => ({
  executionId,
  seq,
  at: at(seq),
  level: seq % 3 === 2 ? "error" : "info",
  step,
  line: text,
});

const succeeded = (logs: LogRow[] = []): ExecutionSettlement => ({
  status: "succeeded",
  output: { ok: true },
  errorCode: null,
  errorMessage: null,
  finishedAt: at(50),
  logs,
});

/** What every dialect's execution log store promises (run by test/store/contracts.test.ts). */
export function executionLogStoreContract(open: OpenStores) {
  let store: Store;
  let peer: Store;
  storesPerTest(open, (opened) => {
    ({ store, peer } = opened);
  });

  const texts = (lines: LogRow[]) => lines.map((l) => l.line);

  describe("executionLogs", () => {
    test("lines appended while running and lines settled with the execution read back in seq order, on every instance", async () => {
      const running = row();
      await store.executions.claim(running);
      // Appended out of order across two commits: seq, not commit order, decides how they read.
      await Promise.all([
        store.executionLogs.append([line(running.id, 2)]),
        store.executionLogs.append([line(running.id, 0), line(running.id, 1)]),
      ]);
      expect(texts(await peer.executionLogs.page(running.id, -1, 10))).toEqual(["line 0", "line 1", "line 2"]);
      const stored = await store.executions.settle(running.id, succeeded([line(running.id, 3), line(running.id, 4)]));
      expect(stored).not.toHaveProperty("logs");
      const all = await peer.executionLogs.page(running.id, -1, 10);
      expect(all).toEqual([0, 1, 2, 3, 4].map((seq) => line(running.id, seq)));
      expect(await peer.executions.get(running.id)).toMatchObject({ status: "succeeded" });
    });

    test("a claim and its settlement in one turn commit the lines with them", async () => {
      const quick = row();
      const claimed = store.executions.claim(quick);
      await claimed;
      await store.executions.settle(quick.id, succeeded([line(quick.id, 0, "only line")]));
      expect(texts(await peer.executionLogs.page(quick.id, -1, 10))).toEqual(["only line"]);
    });

    test("many executions settled together each keep their own lines, and those without any get none", async () => {
      const rows = Array.from({ length: 12 }, () => row());
      const lines = (r: ExecutionRow, i: number) =>
        i % 3 === 0 ? [] : [line(r.id, 0, `first of ${i}`), line(r.id, 1)];
      await Promise.all(rows.map((r) => store.executions.claim(r)));
      await Promise.all(rows.map((r, i) => store.executions.settle(r.id, succeeded(lines(r, i)))));
      for (const [i, r] of rows.entries()) {
        expect(await peer.executionLogs.page(r.id, -1, 10)).toEqual(lines(r, i));
        expect(await peer.executions.get(r.id)).toMatchObject({ status: "succeeded" });
      }
    });

    test("lines settled with data writes commit with them, and stay when the writes are refused", async () => {
      const writes = dataWrites(store);
      const kept = row();
      const refused = row();
      await Promise.all([store.executions.claim(kept), store.executions.claim(refused)]);
      await store.executions.settle(kept.id, { ...succeeded([line(kept.id, 0)]), writes: [writes.insertLabel("a")] });
      const failed = await store.executions.settle(refused.id, {
        ...succeeded([line(refused.id, 0, "before the refusal")]),
        writes: [writes.renameMissing()],
      });
      expect(failed).toMatchObject({ status: "failed", errorMessage: writes.gone });
      expect(await writes.labels()).toEqual(["a"]);
      expect(texts(await peer.executionLogs.page(kept.id, -1, 10))).toEqual(["line 0"]);
      expect(texts(await peer.executionLogs.page(refused.id, -1, 10))).toEqual(["before the refusal"]);
    });

    test("pages after a seq, and a line written twice is stored once", async () => {
      const r = row();
      await store.executions.claim(r);
      const lines = Array.from({ length: 7 }, (_, seq) => line(r.id, seq));
      await store.executionLogs.append(lines);
      await store.executionLogs.append([{ ...line(r.id, 3), line: "again" }]);
      expect((await store.executionLogs.page(r.id, -1, 3)).map((l) => l.seq)).toEqual([0, 1, 2]);
      expect((await store.executionLogs.page(r.id, 2, 3)).map((l) => l.seq)).toEqual([3, 4, 5]);
      expect((await store.executionLogs.page(r.id, 5, 3)).map((l) => l.seq)).toEqual([6]);
      expect(await store.executionLogs.page(r.id, 6, 3)).toEqual([]);
      expect((await store.executionLogs.page(r.id, 2, 1))[0]?.line).toBe("line 3");
      expect(await store.executionLogs.page(row().id, -1, 3)).toEqual([]);
    });

    test("tally counts an execution's lines and UTF-8 bytes and names the next seq", async () => {
      const r = row();
      await store.executions.claim(r);
      expect(await store.executionLogs.tally(r.id)).toEqual({ lines: 0, bytes: 0, nextSeq: 0 });
      await store.executionLogs.append([line(r.id, 0, "héllo"), line(r.id, 1, "step", "charge")]);
      expect(await peer.executionLogs.tally(r.id)).toEqual({ lines: 2, bytes: 10, nextSeq: 2 });
      expect((await peer.executionLogs.page(r.id, 0, 1))[0]).toMatchObject({ step: "charge", level: "info" });
    });
  });
}
