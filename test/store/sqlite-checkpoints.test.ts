import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readlinkSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../src/store/open.ts";
import type { ExecutionRow } from "../../src/store/rows.ts";
import { BACKSTOP_PAGES } from "../../src/store/sqlite/checkpoints/index.ts";
import type { Store } from "../../src/store/store.ts";
import { checkpointedExecutionIds } from "../support/databases.ts";
import { row } from "../support/rows.ts";

// A SQLite server's WAL checkpoints run on a thread of their own (src/store/sqlite/checkpoints/), and
// the serving connection checkpoints only past BACKSTOP_PAGES. What must hold: commits reach the database
// file without the serving connection copying them, and the WAL stays bounded under steady writes (a
// checkpoint on another connection alone never lets the log start over: it grew to 420 MiB in 15 s).

let dir: string;
let path: string;
let store: Store | null;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "actuate-checkpoints-"));
  path = join(dir, "actuate.db");
  store = null;
});
afterEach(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Claims and settles `rows` in one turn: one group commit, each row written once, settled. */
async function commit(s: Store, rows: ExecutionRow[]): Promise<void> {
  await Promise.all(
    rows.map(async (r) => {
      await s.executions.claim(r);
      await s.executions.settle(r.id, {
        status: "succeeded",
        output: { ok: true },
        errorCode: null,
        errorMessage: null,
        finishedAt: r.createdAt,
      });
    }),
  );
}

const walBytes = () => {
  try {
    return statSync(`${path}-wal`).size;
  } catch {
    return 0;
  }
};

/** Open files of this process on the database file itself: the serving connection, and the thread's once started. */
const connectionsToDatabase = () =>
  readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === path;
    } catch {
      return false; // closed while listed
    }
  }).length;

describe("SQLite WAL checkpoints on their own thread", () => {
  test("an idle store starts no thread: the start-up sweep and the poll for due runs write nothing; a commit does", async () => {
    store = await openStore(`sqlite:${path}`);
    expect(connectionsToDatabase()).toBe(1);
    await store.instances.recover(Date.now());
    for (let i = 0; i < 3; i++) expect(await store.runs.claim("owner", Date.now(), Date.now() + 1_000, 10)).toEqual([]);
    expect(await store.runs.renew("owner", [], Date.now() + 1_000)).toEqual([]);
    await Bun.sleep(250); // past the thread's interval: a timer set by any of them would have started it
    expect(connectionsToDatabase()).toBe(1);
    await commit(store, [row()]);
    const deadline = Date.now() + 20_000;
    while (connectionsToDatabase() < 2 && Date.now() < deadline) await Bun.sleep(25);
    expect(connectionsToDatabase()).toBe(2);
  }, 30_000);

  test("a few commits reach the database file, though the serving connection would wait for thousands of pages", async () => {
    store = await openStore(`sqlite:${path}`);
    const rows = Array.from({ length: 20 }, () => row());
    await commit(store, rows);
    // Far below BACKSTOP_PAGES: only the checkpoint thread copies them into the file.
    expect(walBytes()).toBeLessThan(BACKSTOP_PAGES * 4096);
    const deadline = Date.now() + 20_000;
    let found = await checkpointedExecutionIds(path);
    while (rows.some((r) => !found.has(r.id)) && Date.now() < deadline) {
      await Bun.sleep(25);
      found = await checkpointedExecutionIds(path);
    }
    expect(rows.filter((r) => !found.has(r.id))).toEqual([]);
  }, 30_000);

  test("under steady writes the WAL stays bounded, and what was written is all there after a restart", async () => {
    store = await openStore(`sqlite:${path}`);
    const written: ExecutionRow[] = [];
    let largest = 0;
    // ~6 pages a commit, ~18 000 in all: past the backstop several times over.
    for (let i = 0; i < 3_000; i++) {
      const rows = Array.from({ length: 20 }, () => row({ input: { text: "x".repeat(200), i } }));
      await commit(store, rows);
      written.push(...rows);
      largest = Math.max(largest, walBytes());
    }
    const pages = Math.ceil(largest / 4096);
    // The backstop's pages, and what is committed while its checkpoint waits for the thread's to end
    // (measured up to ~4 700): bounded, where a log that never starts over would hold all ~18 000.
    expect(pages).toBeLessThan(BACKSTOP_PAGES * 2);
    await store.close();
    store = await openStore(`sqlite:${path}`);
    const sample = written.filter((_, i) => i % 1_000 === 0);
    for (const r of sample) expect((await store.executions.get(r.id))?.status).toBe("succeeded");
    expect(await store.executions.list({ limit: 1, maxValueBytes: 64 })).toHaveLength(1);
  }, 120_000);
});
