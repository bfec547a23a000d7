import { Database } from "bun:sqlite";
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../src/store/open.ts";
import type { ExecutionRow } from "../../src/store/rows.ts";
import { GENERATION_KEYS, requestKeysPath } from "../../src/store/sqlite/request-keys/file.ts";
import { hashKey, KeyFilter } from "../../src/store/sqlite/request-keys/filter.ts";
import { hashedKey, SqliteRequestIndex } from "../../src/store/sqlite/request-keys/index.ts";
import { RecentKeys } from "../../src/store/sqlite/request-keys/recent.ts";
import type { Store } from "../../src/store/store.ts";
import { executeStatements, selectRows } from "../support/databases.ts";
import { row } from "../support/rows.ts";
import { runRows } from "./fixture.ts";

// SQLite keeps recent request keys in memory and merges them, on a worker thread, into the request-key
// file beside the database (src/store/sqlite/request-keys/index.ts). What must hold whatever the merge has
// done: a key names one execution, across a clean restart, a crash before the merge, and a lost file.

let dir: string;
let url: string;
/** The request-key file, as a URL selectRows reads. */
let keysUrl: string;
let open: Store[];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "actuate-requests-"));
  url = `sqlite:${join(dir, "test.db")}`;
  keysUrl = `sqlite:${requestKeysPath(join(dir, "test.db"))}`;
  open = [];
});
afterEach(async () => {
  for (const store of open) await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function reopen(): Promise<Store> {
  const store = await openStore(url);
  open.push(store);
  return store;
}

const merged = async () =>
  (await selectRows(keysUrl, "select request_id as requestId, execution_id as executionId from request_keys")).map(
    (r) => `${r.requestId}→${r.executionId}`,
  );

interface Key {
  environment: number;
  principalKind: string;
  principalId: string;
  requestId: string;
  id: string;
}

/** The columns `commit` fills: a table made by a test has these, the store's has them and more. */
const EXECUTIONS =
  "create table executions (environment integer not null default 1, id text primary key, request_id, principal_kind, principal_id, action, kind, " +
  "release_version, contract_hash, input_fingerprint, input, input_bytes, status, created_at)";

/**
 * What the store does for each key: looks it up (its claim), inserts the execution holding it (all of
 * `keys` in one transaction, a group commit), then tells the index.
 */
function commit(db: Database, index: SqliteRequestIndex, ...keys: Key[]): void {
  for (const k of keys) expect(index.lookup(k.environment, k.principalKind, k.principalId, k.requestId)).toBeNull();
  const insert = db.prepare(
    `insert into main.executions (environment, id, request_id, principal_kind, principal_id, action, kind,
       release_version, contract_hash, input_fingerprint, input, input_bytes, status, created_at)
     values (?5, ?1, ?2, ?3, ?4, 'test.echo', 'function', 't1', 'c', 'f', '{}', 2, 'succeeded', 0)`,
  );
  const rowids = db.transaction(() =>
    keys.map((k) =>
      Number(insert.run(k.id, k.requestId, k.principalKind, k.principalId, k.environment).lastInsertRowid),
    ),
  )();
  for (const [i, k] of keys.entries()) index.committed(k.environment, k, rowids[i] as number);
}

const newKey = (environment = 1): Key => ({
  environment,
  principalKind: "user",
  principalId: "alice",
  requestId: crypto.randomUUID(),
  id: Bun.randomUUIDv7(),
});

/** An index of a database in memory, written on its own connection, and the warnings it told. */
function memoryIndex() {
  const db = new Database(":memory:");
  db.exec(EXECUTIONS);
  const index = new SqliteRequestIndex(db, ":memory:", () => undefined);
  const told: string[] = [];
  index.warn = (message) => told.push(message);
  return { db, index, told };
}

const settled = (store: Store, r: ExecutionRow) =>
  store.executions.settle(r.id, {
    status: "succeeded",
    output: 1,
    errorCode: null,
    errorMessage: null,
    finishedAt: r.createdAt,
  });

/** A store that made and settled `count` executions, then closed cleanly: their rows. */
async function settledThenClosed(count: number): Promise<ExecutionRow[]> {
  const store = await reopen();
  const rows = Array.from({ length: count }, () => row());
  await Promise.all(rows.map(async (r) => (await store.executions.claim(r)) && settled(store, r)));
  await store.close();
  open = [];
  return rows;
}

describe("SQLite request keys", () => {
  test("a clean close merges every key; after a restart each key still names its execution", async () => {
    const rows = await settledThenClosed(40);
    expect((await merged()).sort()).toEqual(rows.map((r) => `${r.requestId}→${r.id}`).sort());

    const again = await reopen();
    for (const r of rows) {
      const claim = await again.executions.claim(row({ requestId: r.requestId }));
      expect(claim).toMatchObject({ created: false, row: { id: r.id, status: "succeeded" } });
    }
    expect(
      await again.executions.findByRequest({ kind: "user", id: "alice" }, rows[0]?.requestId as string),
    ).toMatchObject({
      id: rows[0]?.id,
    });
  });

  test("a crash after the commit and before the merge loses no key: the restart merges them first", async () => {
    // The store is opened (migrated) here first, so the crashing process only claims.
    await (await reopen()).close();
    open = [];
    const crashed = Bun.spawnSync(
      ["bun", "test/fixtures/processes/claim-and-crash.ts", url.slice("sqlite:".length), "25"],
      {
        stderr: "pipe",
      },
    );
    expect(crashed.exitCode).toBe(0);
    const { rows, admitted } = JSON.parse(crashed.stdout.toString()) as {
      rows: ExecutionRow[];
      admitted: ExecutionRow;
    };
    expect(rows).toHaveLength(25);
    // The process ended before its merger ran: only the executions table knows these keys.
    expect(await merged()).toEqual([]);
    const stored = await selectRows(url, "select count(*) as n from executions");
    expect(stored[0]?.n).toBe(26);

    const store = await reopen();
    const claims = await Promise.all(rows.map((r) => store.executions.claim(row({ requestId: r.requestId }))));
    expect(claims.map((c) => [c.created, c.row.id])).toEqual(rows.map((r) => [false, r.id]));
    const sameRequest = runRows({ requestId: admitted.requestId });
    expect(await store.runs.admit(sameRequest.execution, sameRequest.run)).toMatchObject({
      created: false,
      execution: { id: admitted.id },
    });
    expect((await merged()).length).toBe(26);
  });

  test("a crash after a merge recorded its mark: the restart merges the later keys from the mark on", async () => {
    await (await reopen()).close();
    open = [];
    const args = ["bun", "test/fixtures/processes/claim-and-crash.ts", url.slice("sqlite:".length), "10", "30"];
    const crashed = Bun.spawnSync(args, { stderr: "pipe" });
    expect(crashed.exitCode).toBe(0);
    const { merged: first, rows } = JSON.parse(crashed.stdout.toString()) as {
      merged: ExecutionRow[];
      rows: ExecutionRow[];
    };
    expect((await merged()).sort()).toEqual(first.map((r) => `${r.requestId}→${r.id}`).sort());
    const [mark] = await selectRows(keysUrl, "select through from merged_through where id = 1");
    // The mark moved past the start, and not past the executions the crash left unmerged.
    expect(String(mark?.through) > "").toBe(true);
    expect(rows.every((r) => r.id >= String(mark?.through))).toBe(true);

    const store = await reopen();
    for (const r of [...first, ...rows]) {
      expect(await store.executions.claim(row({ requestId: r.requestId }))).toMatchObject({
        created: false,
        row: { id: r.id },
      });
    }
    expect((await merged()).length).toBe(first.length + rows.length + 1);
  }, 30_000);

  test("a lost request-key file is rebuilt from the executions; a stale one cannot hide a new execution", async () => {
    const rows = await settledThenClosed(30);
    const stale = await selectRows(keysUrl, "select * from request_keys");
    expect(stale).toHaveLength(30);

    // Lost (deleted, or a database restored without it; an upgrade from the index inside the database too).
    for (const suffix of ["", "-wal", "-shm"])
      rmSync(`${requestKeysPath(join(dir, "test.db"))}${suffix}`, { force: true });
    const rebuilt = await reopen();
    for (const r of rows) {
      expect(await rebuilt.executions.claim(row({ requestId: r.requestId }))).toMatchObject({
        created: false,
        row: { id: r.id },
      });
    }
    // Stale: the file names an execution the database does not have (restored from an older copy, or
    // deleted by retention before the file heard): the key is free, and names the new execution after restarts.
    const ghost = row();
    const db = new Database(requestKeysPath(join(dir, "test.db")));
    db.run("insert into request_keys values (0, ?1, ?2, ?3, ?4)", ["user", "alice", ghost.requestId, ghost.id]);
    db.close();
    const again = row({ requestId: ghost.requestId });
    expect(await rebuilt.executions.claim(again)).toMatchObject({ created: true, row: { id: again.id } });
    await settled(rebuilt, again);
    await rebuilt.close();
    open = [];
    const last = await reopen();
    expect(await last.executions.findByRequest({ kind: "user", id: "alice" }, ghost.requestId)).toMatchObject({
      id: again.id,
    });
    expect(await merged()).toContain(`${ghost.requestId}→${again.id}`);
  });

  test("a restart's merge that fails (the file locked) is tried again by the next claim, which then finds the keys", async () => {
    const rows = await settledThenClosed(5);
    const path = requestKeysPath(join(dir, "test.db"));
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });

    // No busy timeout on this connection: the lock fails the merge at once instead of after 5 s.
    const db = new Database(join(dir, "test.db"));
    const index = new SqliteRequestIndex(db, path, () => undefined);
    const locker = new Database(path);
    locker.exec("begin immediate");
    const first = rows[0] as ExecutionRow;
    expect(() => index.lookup(1, first.principalKind, first.principalId, first.requestId)).toThrow(/locked/);
    locker.exec("commit");
    locker.close();
    for (const r of rows) expect(index.lookup(1, r.principalKind, r.principalId, r.requestId)).toBe(r.id);
    await index.close();
    db.close();
  });

  test("failed merges are told, their keys are still answered, and the next merge writes them all", async () => {
    // In memory, the index is written on the database's own connection: the failure path is the same.
    const { db, index, told } = memoryIndex();
    const [first, second, third] = [newKey(), newKey(), newKey()];
    commit(db, index, first);
    // The filter answers for the file from here on: a new key's claim does not read the (renamed) table.
    while (!index.filtering) await turn();
    db.exec("alter table requests.request_keys rename to request_keys_away");
    await expect(index.mergeAll()).rejects.toThrow(/no such table/);
    // A second failure, with a key committed since and one with nothing new: each tries every key so far.
    commit(db, index, second);
    await expect(index.mergeAll()).rejects.toThrow(/no such table/);
    await expect(index.mergeAll()).rejects.toThrow(/no such table/);
    expect(told).toEqual([
      expect.stringMatching(/^merging 1 request keys failed \(kept in memory, tried again\): .*no such table/),
      expect.stringMatching(/^merging 2 request keys failed/),
      expect.stringMatching(/^merging 2 request keys failed/),
    ]);
    commit(db, index, third);
    for (const k of [first, second, third]) expect(index.lookup(1, "user", "alice", k.requestId)).toBe(k.id);
    db.exec("alter table requests.request_keys_away rename to request_keys");
    await index.mergeAll();
    const stored = db.query<{ id: string }, []>("select execution_id as id from requests.request_keys").all();
    expect(stored.map((r) => r.id).sort()).toEqual([first, second, third].map((k) => k.id).sort());
    await index.close();
    db.close();
  });

  test("a filter's build that cannot read the file is told, not thrown; lookups read the file meanwhile", async () => {
    const { db, index, told } = memoryIndex();
    const k = newKey();
    commit(db, index, k);
    await index.mergeAll();
    // The first lookup started the build; its first slice reads on a later turn, after the table is gone.
    db.exec("alter table requests.request_keys rename to request_keys_away");
    await turn();
    await turn();
    expect(told).toEqual([
      expect.stringMatching(/^building the request-key filter failed \(tried again in 10 s\): .*no such table/),
    ]);
    expect(index.filtering).toBe(false);
    db.exec("alter table requests.request_keys_away rename to request_keys");
    expect(index.lookup(1, "user", "alice", k.requestId)).toBe(k.id);
    expect(index.lookup(1, "user", "alice", crypto.randomUUID())).toBeNull();
    await index.close();
    db.close();
  });

  // A merge that failed wrote nothing: the next one reads the failed batch's rows again, with the rows
  // committed meanwhile (some while the failing merge was in flight).
  const failingMerges = [
    { where: "on the database's connection (:memory:)", inMemory: true, schema: "requests" },
    { where: "on the writer thread", inMemory: false, schema: "main" },
  ];
  for (const { where, inMemory, schema } of failingMerges) {
    test(`keys committed while a merge fails are all written by the next merge, the failed batch's too: ${where}`, async () => {
      const path = inMemory ? ":memory:" : join(dir, "test.db");
      const db = new Database(path);
      // As the store's: the writer thread reads the executions while this connection commits more.
      if (!inMemory) db.exec("PRAGMA journal_mode = WAL");
      db.exec(EXECUTIONS);
      const file = inMemory ? ":memory:" : requestKeysPath(path);
      const index = new SqliteRequestIndex(db, file, () => undefined);
      // The table is renamed where the writer writes it: its own connection to the file, or the database's.
      const keys = inMemory ? db : new Database(file);
      const told: string[] = [];
      index.warn = (message) => told.push(message);
      // A first merge: the writer thread is open before the table goes (it would make a new one).
      const merged = [newKey()];
      commit(db, index, merged[0] as Key);
      await index.mergeAll();
      while (!index.filtering) await Bun.sleep(1);
      const before = Array.from({ length: 600 }, newKey);
      commit(db, index, ...before);
      keys.exec(`alter table ${schema}.request_keys rename to request_keys_away`);
      const failing = index.mergeAll();
      const during = Array.from({ length: 600 }, newKey);
      commit(db, index, ...during);
      // Not `expect(failing).rejects`: Bun's waits there without taking the (unref'd) writer thread's answer.
      const failure = await failing.then(
        () => null,
        (error: Error) => error,
      );
      expect(failure?.message).toMatch(/no such table/);
      expect(told).toEqual([expect.stringMatching(/^merging 600 request keys failed/)]);
      keys.exec(`alter table ${schema}.request_keys_away rename to request_keys`);
      await index.mergeAll();
      const stored = keys.query<{ id: string }, []>(`select execution_id as id from ${schema}.request_keys`).all();
      expect(stored.map((r) => r.id).sort()).toEqual([...merged, ...before, ...during].map((k) => k.id).sort());
      await index.close();
      if (keys !== db) keys.close();
      db.close();
    });
  }

  test("concurrent claims of one key, before and after its merge, name one execution", async () => {
    const store = await reopen();
    const requestId = crypto.randomUUID();
    const first = await Promise.all(Array.from({ length: 50 }, () => store.executions.claim(row({ requestId }))));
    expect(first.filter((c) => c.created)).toHaveLength(1);
    const holder = first.find((c) => c.created)?.row.id;
    await settled(store, first.find((c) => c.created)?.row as ExecutionRow);
    // Wait for the merge to land (the worker merges within a second of the commit).
    for (let i = 0; i < 200 && (await merged()).length === 0; i++) await Bun.sleep(25);
    expect(await merged()).toEqual([`${requestId}→${holder}`]);
    const later = await Promise.all(Array.from({ length: 50 }, () => store.executions.claim(row({ requestId }))));
    expect(later.every((c) => !c.created && c.row.id === holder)).toBe(true);
  });

  test("retention forgets a merged key with its execution: claimed again, it names the new execution after restarts", async () => {
    let store = await reopen();
    const old = row({ createdAt: 10, startedAt: 10 });
    await store.executions.claim(old);
    await store.executions.settle(old.id, {
      status: "succeeded",
      output: 1,
      errorCode: null,
      errorMessage: null,
      finishedAt: 20,
    });
    await store.close();
    expect(await merged()).toEqual([`${old.requestId}→${old.id}`]);

    store = await openStore(url);
    expect(await store.retention.pruneFinished(1_000, 10, async () => {})).toBe(1);
    const again = row({ requestId: old.requestId });
    expect(await store.executions.claim(again)).toMatchObject({ created: true });
    await settled(store, again);
    await store.close();

    const last = await reopen();
    expect(await last.executions.findByRequest({ kind: "user", id: "alice" }, old.requestId)).toMatchObject({
      id: again.id,
    });
    expect(await merged()).toEqual([`${old.requestId}→${again.id}`]);
  });
});

describe("request keys by environment", () => {
  const environmentTwo = () =>
    executeStatements(
      url,
      "insert into environments (id, handle, revision, updated_at, created_at, changed) values (2, 'two', 0, 0, 0, 0)",
    );
  const storedKeys = async () =>
    (
      await selectRows(
        keysUrl,
        "select principal_kind as kind, request_id as requestId, execution_id as id from request_keys",
      )
    ).map((r) => `${r.kind} ${r.requestId}→${r.id}`);
  const settledAt = (store: Store, r: ExecutionRow, finishedAt: number) =>
    store.executions.settle(r.id, { status: "succeeded", output: 1, errorCode: null, errorMessage: null, finishedAt });

  test("environment 1's key is single mode's, text and hashes; another environment's names its id", () => {
    const text = "user\u0000alice\u0000r-1";
    expect(hashedKey(1, "user", "alice", "r-1")).toEqual({
      text,
      first: Bun.hash.xxHash32(text, 0),
      second: Bun.hash.xxHash32(text, 0x9e3779b9),
    });
    expect(hashedKey(2, "user", "alice", "r-1").text).toBe("2:user\u0000alice\u0000r-1");
  });

  test("one requestId in two environments: two keys merged, environment 1's as single mode stored it, each replayed in its own after restarts", async () => {
    const store = await reopen();
    await environmentTwo();
    const requestId = crypto.randomUUID();
    const [first, second] = [row({ requestId }), row({ requestId })];
    await Promise.all([store.executions.claim(first), store.environment(2).executions.claim(second)]);
    await Promise.all([settledAt(store, first, 1), settledAt(store.environment(2), second, 1)]);
    await store.close();
    open = [];
    expect((await storedKeys()).sort()).toEqual([`2:user ${requestId}→${second.id}`, `user ${requestId}→${first.id}`]);

    const again = await reopen();
    expect(await again.executions.claim(row({ requestId }))).toMatchObject({ created: false, row: { id: first.id } });
    const inTwo = await again.environment(2).executions.claim(row({ requestId }));
    expect(inTwo).toMatchObject({ created: false, row: { id: second.id } });
    await again.close();
    open = [];

    // Read from the file alone, with the filter built from it, as a restart answers them.
    const db = connect();
    const index = new SqliteRequestIndex(db, requestKeysPath(join(dir, "test.db")), () => undefined);
    expect(index.lookup(1, "user", "alice", requestId)).toBe(first.id);
    expect(index.lookup(2, "user", "alice", requestId)).toBe(second.id);
    expect(index.lookup(3, "user", "alice", requestId)).toBeNull();
    while (!index.filtering) await turn();
    expect(index.lookup(1, "user", "alice", requestId)).toBe(first.id);
    expect(index.lookup(2, "user", "alice", requestId)).toBe(second.id);
    expect(index.lookup(3, "user", "alice", requestId)).toBeNull();
    await index.close();
    db.close();
  });

  test("retention forgets a merged key in its own environment: the other's same key stays", async () => {
    const store = await reopen();
    await environmentTwo();
    const requestId = crypto.randomUUID();
    const [first, second] = [row({ requestId }), row({ requestId })];
    await Promise.all([store.executions.claim(first), store.environment(2).executions.claim(second)]);
    await Promise.all([settledAt(store, first, 5_000), settledAt(store.environment(2), second, 20)]);
    await store.close();
    open = [];

    const pruning = await reopen();
    expect(await pruning.environment(2).retention.pruneFinished(1_000, 10, async () => {})).toBe(1);
    await pruning.close();
    open = [];
    expect(await storedKeys()).toEqual([`user ${requestId}→${first.id}`]);
    const last = await reopen();
    expect(await last.executions.claim(row({ requestId }))).toMatchObject({ created: false, row: { id: first.id } });
    expect(await last.environment(2).executions.claim(row({ requestId }))).toMatchObject({ created: true });
  });
});

/** The database's own connection, as the store opens it: a lock held by a closing connection is waited for. */
function connect(): Database {
  const db = new Database(join(dir, "test.db"));
  db.exec("PRAGMA busy_timeout = 5000");
  return db;
}

/** One turn of the event loop: the index fills its filter a slice per turn. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("the recent keys in memory", () => {
  test("entries sharing both hashes are candidates: the one whose execution holds the key is answered, after growing too", () => {
    const table = new RecentKeys(4);
    table.add(7, 9, "first");
    table.add(7, 9, "second");
    // Enough others to grow the table several times; some land in the same slots (second hash 9 & mask).
    for (let i = 0; i < 100; i++) table.add(i, 9 + i * 8, `other-${i}`);
    expect(table.size).toBe(102);
    expect(table.find(7, 9, (id) => id === "second")).toBe("second");
    expect(table.find(7, 9, (id) => id === "first")).toBe("first");
    expect(table.find(7, 9, () => false)).toBeNull();
    expect(table.find(7, 10, () => true)).toBeNull();
    expect(table.find(42, 9 + 42 * 8, () => true)).toBe("other-42");
    const firsts: number[] = [];
    table.forEachFirstHash((hash) => firsts.push(hash));
    expect(firsts.sort((a, b) => a - b)).toEqual(
      [...Array.from({ length: 100 }, (_, i) => i), 7, 7].sort((a, b) => a - b),
    );
  });

  test("a key in memory whose execution was deleted is not answered; claimed again, it names the new one", async () => {
    await (await reopen()).close();
    open = [];
    const db = connect();
    const index = new SqliteRequestIndex(db, requestKeysPath(join(dir, "test.db")), () => undefined);
    const gone = newKey();
    commit(db, index, gone);
    expect(index.lookup(1, "user", "alice", gone.requestId)).toBe(gone.id);
    // Retention deletes the execution (and forgets the key) before its batch was merged.
    db.run("delete from executions where id = ?1", [gone.id]);
    await index.forget([gone]);
    expect(index.lookup(1, "user", "alice", gone.requestId)).toBeNull();
    const again = { ...gone, id: Bun.randomUUIDv7() };
    commit(db, index, again);
    expect(index.lookup(1, "user", "alice", gone.requestId)).toBe(again.id);
    await index.mergeAll();
    expect(index.lookup(1, "user", "alice", gone.requestId)).toBe(again.id);
    expect(await merged()).toEqual([`${gone.requestId}→${again.id}`]);
    await index.close();
    db.close();
  });

  test("a rowid given again after a deletion, below the first of its batch, is merged with the batch", async () => {
    await (await reopen()).close();
    open = [];
    const db = connect();
    const index = new SqliteRequestIndex(db, requestKeysPath(join(dir, "test.db")), () => undefined);
    const [x, a, b] = [newKey(), newKey(), newKey()];
    const rowidOf = (k: Key) =>
      db.query<{ rowid: number }, [string]>("select rowid from executions where id = ?1").get(k.id)?.rowid;
    commit(db, index, x);
    await index.mergeAll();
    commit(db, index, a);
    // Retention empties the table before a's batch is merged: b takes x's rowid again, below a's.
    const aRowid = rowidOf(a) as number;
    db.run("delete from executions");
    await index.forget([x, a]);
    commit(db, index, b);
    expect(rowidOf(b)).toBeLessThan(aRowid);
    await index.mergeAll();
    expect(await merged()).toEqual([`${b.requestId}→${b.id}`]);
    await index.close();
    db.close();
  });
});

describe("the request keys' filter", () => {
  test("a key filter never rules out a key it was given, and rules out most others", () => {
    const filter = new KeyFilter(10_000);
    const given = Array.from({ length: 10_000 }, () => hashKey(`user\u0000alice\u0000${crypto.randomUUID()}`));
    for (const key of given) filter.add(key);
    expect(given.every((key) => filter.mayHold(key))).toBe(true);
    const others = Array.from({ length: 10_000 }, () => hashKey(`user\u0000alice\u0000${crypto.randomUUID()}`));
    const falsePositives = others.filter((key) => filter.mayHold(key)).length;
    expect(falsePositives).toBeLessThan(300); // ~1 % expected at capacity
    expect(filter.full).toBe(false);
    filter.add(hashKey("one more"));
    expect(filter.full).toBe(true);
  });

  test("keys committed before and while a filter is built are found once merged, after the scan passed them", async () => {
    await (await reopen()).close();
    open = [];
    const db = connect();
    // A capacity of 16 makes the filter fill up and be built again, larger.
    const index = new SqliteRequestIndex(db, requestKeysPath(join(dir, "test.db")), () => undefined, {
      filterCapacity: 16,
      generationSize: GENERATION_KEYS,
    });
    const keys: Key[] = [];
    const commitNew = (n: number) => {
      for (let i = 0; i < n; i++) {
        const k = {
          environment: 1,
          principalKind: "user",
          principalId: "alice",
          requestId: crypto.randomUUID(),
          id: Bun.randomUUIDv7(),
        };
        commit(db, index, k);
        keys.push(k);
      }
    };
    const check = () => {
      for (const k of keys) expect(index.lookup(k.environment, k.principalKind, k.principalId, k.requestId)).toBe(k.id);
      expect(index.lookup(1, "user", "alice", crypto.randomUUID())).toBeNull();
    };
    // The first key starts a build; these arrive while it waits for its scan, which finds none of them
    // in the table: the filter holds them because they were added as they came.
    commitNew(10);
    await turn();
    expect(index.filtering).toBe(true);
    await index.mergeAll();
    check();
    // These overfill the filter: a larger one is built, whose scan runs before they are merged. It
    // holds them (and the earlier ones) because the keys not merged yet went in when it started.
    commitNew(10);
    await turn();
    await turn();
    await index.mergeAll();
    check();
    await index.close();
    db.close();
  });

  test("keys spread over generations (a new one when the newest is full) are all found, after a restart too, and forgotten in any", async () => {
    await (await reopen()).close();
    open = [];
    const path = requestKeysPath(join(dir, "test.db"));
    const sizes = { filterCapacity: 16, generationSize: 8 };
    const keys = Array.from({ length: 40 }, newKey);
    const first = connect();
    const writer = new SqliteRequestIndex(first, path, () => undefined, sizes);
    // Batches of 5: a generation of 8 takes one batch, the next batch opens a new generation.
    for (let i = 0; i < keys.length; i += 5) {
      commit(first, writer, ...keys.slice(i, i + 5));
      await writer.mergeAll();
    }
    await writer.close();
    first.close();
    const generations = await selectRows(
      `sqlite:${path}`,
      "select generation, count(*) as n from request_keys group by generation",
    );
    expect(generations.map((g) => Number(g.n))).toEqual([5, 5, 5, 5, 5, 5, 5, 5]);
    expect((await selectRows(`sqlite:${path}`, "select generation from merged_through"))[0]?.generation).toBe(7);

    const db = connect();
    const index = new SqliteRequestIndex(db, path, () => undefined, sizes);
    for (const k of keys) expect(index.lookup(k.environment, k.principalKind, k.principalId, k.requestId)).toBe(k.id);
    for (let t = 0; t < 3; t++) await turn();
    expect(index.filtering).toBe(true);
    for (const k of keys) expect(index.lookup(k.environment, k.principalKind, k.principalId, k.requestId)).toBe(k.id);
    expect(index.lookup(1, "user", "alice", crypto.randomUUID())).toBeNull();
    const at = (i: number) => keys[i] as (typeof keys)[number];
    const [oldest, newest, middle] = [at(0), at(39), at(20)];
    await index.forget([oldest, newest]);
    expect(index.lookup(oldest.environment, oldest.principalKind, oldest.principalId, oldest.requestId)).toBeNull();
    expect(index.lookup(newest.environment, newest.principalKind, newest.principalId, newest.requestId)).toBeNull();
    expect(index.lookup(middle.environment, middle.principalKind, middle.principalId, middle.requestId)).toBe(
      middle.id,
    );
    await index.close();
    db.close();
  });

  test("after a restart the filter is built from the table: every merged key is found, before and after", async () => {
    await (await reopen()).close();
    open = [];
    const keys = Array.from({ length: 20_000 }, () => ({
      environment: 1,
      principalKind: "user",
      principalId: "alice",
      requestId: crypto.randomUUID(),
      id: Bun.randomUUIDv7(),
    }));
    const first = connect();
    const writer = new SqliteRequestIndex(first, requestKeysPath(join(dir, "test.db")), () => undefined);
    // One transaction: 20 000 of their own would each wait for the disk.
    commit(first, writer, ...keys);
    await writer.close();
    first.close();
    expect((await merged()).length).toBe(keys.length);

    const db = connect();
    const index = new SqliteRequestIndex(db, requestKeysPath(join(dir, "test.db")), () => undefined);
    const sample = keys.filter((_, i) => i % 97 === 0);
    // The first lookup starts the build (~1 ms of reading a turn): answers come from the table meanwhile.
    for (const k of sample) expect(index.lookup(k.environment, k.principalKind, k.principalId, k.requestId)).toBe(k.id);
    expect(index.filtering).toBe(false);
    await turn();
    // 20 000 keys take more than a turn's reading: the build lets the event loop run between slices.
    expect(index.filtering).toBe(false);
    for (const k of sample) expect(index.lookup(k.environment, k.principalKind, k.principalId, k.requestId)).toBe(k.id);
    let turns = 1;
    while (!index.filtering && turns < 10_000) {
      await turn();
      turns++;
    }
    expect(index.filtering).toBe(true);
    for (const k of keys) expect(index.lookup(k.environment, k.principalKind, k.principalId, k.requestId)).toBe(k.id);
    expect(index.lookup(1, "user", "alice", crypto.randomUUID())).toBeNull();
    await index.close();
    db.close();
  }, 30_000);
});
