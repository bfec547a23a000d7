import { expect, test } from "bun:test";
import { uuidV7Floor } from "../../src/lib/ids.ts";
import type { ExecutionRow, NewFileRow } from "../../src/store/rows.ts";
import type { Store } from "../../src/store/store.ts";
import { row } from "../support/rows.ts";
import { at, type OpenStores, runRows, storesPerTest, T0 } from "./fixture.ts";

/** An id made at `ms`, as the engine makes them (UUIDv7). */
const idAt = (ms: number) => Bun.randomUUIDv7("hex", ms);

const fileRow = (path: string, ownerId = "alice"): NewFileRow => ({
  path,
  contentType: "text/plain",
  size: 1,
  sha256: "0".repeat(64),
  ownerKind: "user",
  ownerId,
  createdAt: T0,
  updatedAt: T0,
});

/**
 * What the lists and counts behind the console's endpoints promise (releases.history, files.list,
 * stats), whatever the dialect: run by test/store/contracts.test.ts.
 */
export function consoleStoreContract(open: OpenStores) {
  let store: Store;
  storesPerTest(open, (opened) => {
    ({ store } = opened);
  });
  /** Claimed and settled, so stored on every dialect (SQLite commits a claim with the next group commit). */
  const settled = async (execution: ExecutionRow, status: "succeeded" | "failed") => {
    await store.executions.claim(execution);
    await store.executions.settle(execution.id, {
      status,
      output: null,
      errorCode: status === "failed" ? "action_failed" : null,
      errorMessage: status === "failed" ? "no" : null,
      finishedAt: execution.createdAt,
    });
  };

  test("the release history is newest first, a bounded page at a time, ties on the time broken by version", async () => {
    for (const [version, offset] of [
      ["a", 0],
      ["b", 10],
      ["c", 10],
      ["d", 20],
    ] as const) {
      await store.releases.insert({
        version,
        bundleHash: `h-${version}`,
        manifest: {},
        bundle: "x",
        createdAt: at(offset),
        publishedBy: version === "a" ? null : `ci@${version}`,
      });
    }
    const first = await store.releases.history({ limit: 2 });
    expect(first).toEqual([
      { version: "d", bundleHash: "h-d", createdAt: at(20), publishedBy: "ci@d" },
      { version: "c", bundleHash: "h-c", createdAt: at(10), publishedBy: "ci@c" },
    ]);
    const second = await store.releases.history({ limit: 2, after: { createdAt: at(10), version: "c" } });
    expect(second.map((r) => [r.version, r.publishedBy])).toEqual([
      ["b", "ci@b"],
      ["a", null],
    ]);
    expect(await store.releases.history({ limit: 2, after: { createdAt: at(0), version: "a" } })).toEqual([]);
  });

  test("a published release reads with its manifest and without its bundle; an unknown version is null", async () => {
    const manifest = { version: "v1", actions: [{ name: "a.b", input: { type: "object" } }] };
    await store.releases.insert({
      version: "v1",
      bundleHash: "h",
      manifest,
      bundle: "bytes",
      createdAt: at(5),
      publishedBy: "ci@host",
    });
    expect(await store.releases.published("v1")).toEqual({
      version: "v1",
      bundleHash: "h",
      manifest,
      createdAt: at(5),
      publishedBy: "ci@host",
    });
    expect(await store.releases.published("v2")).toBeNull();
  });

  test("files list in path order by owner and prefix; the prefix is literal (no wildcard), paging resumes after a path", async () => {
    for (const path of ["docs/b.txt", "docs/a.txt", "docs%/x", "doc_s/y", "docsz", "other/c.txt", "docs/sub/d.txt"]) {
      await store.files.put(fileRow(path));
    }
    await store.files.put(fileRow("docs/bob.txt", "bob"));
    const alice = { kind: "user" as const, id: "alice" };
    const paths = async (query: Parameters<Store["files"]["list"]>[0]) =>
      (await store.files.list(query)).map((f) => f.path);

    expect(await paths({ owner: alice, prefix: "docs/", limit: 10 })).toEqual([
      "docs/a.txt",
      "docs/b.txt",
      "docs/sub/d.txt",
    ]);
    expect(await paths({ owner: alice, prefix: "docs/", afterPath: "docs/a.txt", limit: 1 })).toEqual(["docs/b.txt"]);
    // A LIKE would take % and _ as wildcards.
    expect(await paths({ owner: alice, prefix: "docs%", limit: 10 })).toEqual(["docs%/x"]);
    expect(await paths({ owner: alice, prefix: "doc_", limit: 10 })).toEqual(["doc_s/y"]);
    // Without an owner (a service key): every owner's.
    expect(await paths({ prefix: "docs/b", limit: 10 })).toEqual(["docs/b.txt", "docs/bob.txt"]);
    expect(await paths({ owner: { kind: "user", id: "bob" }, prefix: "", limit: 10 })).toEqual(["docs/bob.txt"]);
    expect((await store.files.list({ owner: alice, prefix: "", limit: 100 })).length).toBe(7);
  });

  test("stats count executions and runs created since an id floor, by status", async () => {
    const since = at(60_000);
    for (const [offset, status] of [
      [0, "succeeded"],
      [59_999, "failed"],
      [60_000, "succeeded"],
      [61_000, "succeeded"],
      [62_000, "failed"],
    ] as const) {
      await settled(row({ id: idAt(at(offset)), createdAt: at(offset) }), status);
    }
    for (const offset of [0, 60_500]) {
      const { execution, run } = runRows({ now: at(offset) });
      const id = idAt(at(offset));
      await store.runs.admit({ ...execution, id }, { ...run, id });
    }
    expect(await store.stats.executionsByStatus(uuidV7Floor(since))).toEqual({ succeeded: 2, failed: 1, queued: 1 });
    expect(await store.stats.runsByStatus(uuidV7Floor(since))).toEqual({ queued: 1 });
    expect(await store.stats.executionsByStatus(uuidV7Floor(at(100_000)))).toEqual({});
  });

  test("failing actions: those with the most failed executions since an id floor, most first, ties by name, bounded", async () => {
    const since = at(60_000);
    for (const [offset, action, status] of [
      [0, "old.fail", "failed"],
      [0, "old.fail", "failed"],
      [60_000, "b.fail", "failed"],
      [60_100, "b.fail", "failed"],
      [60_200, "a.fail", "failed"],
      [60_300, "c.fail", "failed"],
      [60_400, "c.fail", "failed"],
      [60_500, "c.fail", "succeeded"],
      [60_600, "ok.only", "succeeded"],
    ] as const) {
      await settled(row({ id: idAt(at(offset)), action, createdAt: at(offset) }), status);
    }
    expect(await store.stats.failingActions(uuidV7Floor(since), 10)).toEqual([
      { action: "b.fail", failed: 2 },
      { action: "c.fail", failed: 2 },
      { action: "a.fail", failed: 1 },
    ]);
    expect(await store.stats.failingActions(uuidV7Floor(since), 1)).toEqual([{ action: "b.fail", failed: 2 }]);
    expect(await store.stats.failingActions(uuidV7Floor(at(100_000)), 10)).toEqual([]);
  });

  test("executions since an id floor and before an id: the range of creation times a list asks for", async () => {
    for (const offset of [0, 1_000, 2_000, 3_000]) {
      await settled(row({ id: idAt(at(offset)), requestId: `r-${offset}`, createdAt: at(offset) }), "succeeded");
    }
    const listed = await store.executions.list({
      sinceId: uuidV7Floor(at(1_000)),
      beforeId: uuidV7Floor(at(3_000)),
      limit: 10,
      maxValueBytes: 1024,
    });
    expect(listed.map((e) => e.requestId)).toEqual(["r-2000", "r-1000"]);
  });
}
