import { beforeEach, describe, expect, test } from "bun:test";
import type { Condition, DataAttr, DataWrite, QueryNode, ReadBudgetSpent } from "../../src/store/data.ts";
import type { ExecutionSettlement } from "../../src/store/executions.ts";
import type { Store } from "../../src/store/store.ts";
import { row } from "../support/rows.ts";
import { at, type OpenStores, storesPerTest, unbounded } from "./fixture.ts";

const title: DataAttr = { label: "title", type: "string" };
const priority: DataAttr = { label: "priority", type: "number" };
const done: DataAttr = { label: "done", type: "boolean" };
const tag: DataAttr = { label: "tag", type: "string" };
const meta: DataAttr = { label: "meta", type: "json" };
const name: DataAttr = { label: "name", type: "string" };

/** Note → its author (a user); read in reverse, a user's notes. */
const AUTHOR = { link: "noteAuthor", direction: "forward" } as const;
const NOTES_OF = { link: "noteAuthor", direction: "reverse" } as const;

const notes = (options: Partial<QueryNode> = {}): QueryNode => ({
  entity: "notes",
  where: null,
  children: [],
  ...options,
});

/**
 * What every DataStore promises (src/store/data.ts), whatever the dialect: compiled plans read the same
 * rows in the same order on SQLite and PostgreSQL. Data is written as src/data/ writes it: DataWrite[]
 * committed with an execution's status (`settleExecution`), all or nothing. Run by contracts.test.ts.
 */
export function dataStoreContract(open: OpenStores) {
  let store: Store;
  let peer: Store;
  storesPerTest(open, (opened) => {
    ({ store, peer } = opened);
  });

  let clock = 0;
  beforeEach(() => {
    clock = 0;
  });
  /** Commits `writes` with an execution's success, as the runner does; answers what was stored. */
  const commit = async (writes: DataWrite[]): Promise<ExecutionSettlement> => {
    const execution = row();
    await store.executions.claim(execution);
    const settled: ExecutionSettlement = {
      status: "succeeded",
      output: null,
      errorCode: null,
      errorMessage: null,
      finishedAt: at(++clock),
      writes,
    };
    return store.executions.settle(execution.id, settled);
  };
  const insert = (entity: string, doc: Record<string, unknown>): DataWrite & { op: "insert" } => ({
    op: "insert",
    entity,
    id: Bun.randomUUIDv7(),
    doc,
    at: at(++clock),
  });
  const link = (note: string, user: string, replace: ("source" | "target")[] = ["source"]): DataWrite => ({
    op: "link",
    link: "noteAuthor",
    sourceId: note,
    sourceEntity: "notes",
    targetId: user,
    targetEntity: "users",
    at: at(++clock),
    replace,
  });
  const titles = async (node: QueryNode) => (await store.data.selectRoots(node, unbounded())).map((r) => r.doc.title);
  const where = (condition: Condition) => notes({ where: condition });

  /** Five notes, created in this order; `tag` and `done` are absent on some. */
  const seedNotes = async () => {
    const rows = [
      insert("notes", { title: "Apple pie", priority: 5, tag: "b", done: true, meta: { x: 1 } }),
      insert("notes", { title: "apple tart", priority: 3, done: false }),
      insert("notes", { title: "50% off", priority: 1, tag: "a" }),
      insert("notes", { title: "a_b", priority: 4, tag: "c", done: true }),
      insert("notes", { title: "axb", priority: 2 }),
    ];
    expect(await commit(rows)).toMatchObject({ status: "succeeded" });
    return rows.map((r) => r.id);
  };

  describe("selectRoots", () => {
    test("reads in creation order by default; where, order, limit and offset", async () => {
      // The first rows by an indexed attribute read its index in order (SQLite is told to: readInOrder).
      await store.data.ensureIndexes([{ entity: "notes", label: "priority", type: "number", unique: false }]);
      await seedNotes();
      expect(await titles(notes())).toEqual(["Apple pie", "apple tart", "50% off", "a_b", "axb"]);
      expect(await titles(notes({ order: { by: "createdAt", direction: "desc" }, limit: 2 }))).toEqual(["axb", "a_b"]);
      const ranked = notes({
        where: { kind: "compare", on: priority, op: ">=", value: 2 },
        order: { by: { ...priority, optional: false, indexed: true }, direction: "desc" },
        limit: 2,
        offset: 1,
      });
      expect(await titles(ranked)).toEqual(["a_b", "apple tart"]);
      expect(await titles(notes({ offset: 4 }))).toEqual(["axb"]);
      const rows = await store.data.selectRoots(notes({ limit: 1 }), unbounded());
      expect(rows).toEqual([
        {
          id: expect.any(String),
          doc: { title: "Apple pie", priority: 5, tag: "b", done: true, meta: { x: 1 } },
          createdAt: at(1),
        },
      ]);
    });

    test("comparisons, and/or, and a constant false", async () => {
      const ids = await seedNotes();
      const lt3: Condition = { kind: "compare", on: priority, op: "<", value: 3 };
      const gt4: Condition = { kind: "compare", on: priority, op: ">", value: 4 };
      expect(await titles(where({ kind: "or", of: [lt3, gt4] }))).toEqual(["Apple pie", "50% off", "axb"]);
      const le3: Condition = { kind: "compare", on: priority, op: "<=", value: 3 };
      const notOne: Condition = { kind: "compare", on: priority, op: "<>", value: 1 };
      expect(await titles(where({ kind: "and", of: [le3, notOne] }))).toEqual(["apple tart", "axb"]);
      expect(await titles(where({ kind: "compare", on: "id", op: "=", value: ids[3] }))).toEqual(["a_b"]);
      expect(await titles(where({ kind: "compare", on: title, op: "=", value: "axb" }))).toEqual(["axb"]);
      expect(await titles(where({ kind: "false" }))).toEqual([]);
      expect(await titles(where({ kind: "and", of: [] }))).toHaveLength(5);
    });

    test("in-lists on ids and attributes; an empty list matches nothing", async () => {
      const ids = await seedNotes();
      expect(await titles(where({ kind: "in", on: priority, values: [1, 3, 99] }))).toEqual(["apple tart", "50% off"]);
      expect(await titles(where({ kind: "in", on: "id", values: [ids[4], ids[0]] }))).toEqual(["Apple pie", "axb"]);
      expect(await titles(where({ kind: "in", on: title, values: ["a_b"] }))).toEqual(["a_b"]);
      expect(await titles(where({ kind: "in", on: done, values: [false] }))).toEqual(["apple tart"]);
      expect(await titles(where({ kind: "in", on: priority, values: [] }))).toEqual([]);
    });

    test("like is case-sensitive and ilike is not; % and _ are wildcards unless escaped", async () => {
      await seedNotes();
      const like = (pattern: string, caseInsensitive = false) =>
        titles(where({ kind: "like", on: title, pattern, caseInsensitive }));
      expect(await like("apple%")).toEqual(["apple tart"]);
      expect(await like("APPLE%", true)).toEqual(["Apple pie", "apple tart"]);
      expect(await like("a_b")).toEqual(["a_b", "axb"]);
      expect(await like("a\\_b")).toEqual(["a_b"]);
      expect(await like("A\\_B", true)).toEqual(["a_b"]);
      expect(await like("50\\%%")).toEqual(["50% off"]);
      expect(await like("%[%")).toEqual([]);
    });

    test("optional attributes: absent is null, and sorts last in both directions", async () => {
      await seedNotes();
      expect(await titles(where({ kind: "isNull", on: tag, isNull: true }))).toEqual(["apple tart", "axb"]);
      expect(await titles(where({ kind: "isNull", on: tag, isNull: false }))).toEqual(["Apple pie", "50% off", "a_b"]);
      // The form data/ gives `$not`: an entity without the attribute matches too.
      const notB: Condition = {
        kind: "or",
        of: [
          { kind: "isNull", on: tag, isNull: true },
          { kind: "compare", on: tag, op: "<>", value: "b" },
        ],
      };
      expect(await titles(where(notB))).toEqual(["apple tart", "50% off", "a_b", "axb"]);
      const byTag = (direction: "asc" | "desc") =>
        titles(notes({ order: { by: { ...tag, optional: true, indexed: false }, direction } }));
      expect(await byTag("asc")).toEqual(["50% off", "Apple pie", "a_b", "apple tart", "axb"]);
      expect(await byTag("desc")).toEqual(["a_b", "Apple pie", "50% off", "apple tart", "axb"]);
      expect(await titles(where({ kind: "isNull", on: meta, isNull: false }))).toEqual(["Apple pie"]);
    });

    test("booleans compare as booleans", async () => {
      await seedNotes();
      expect(await titles(where({ kind: "compare", on: done, op: "=", value: true }))).toEqual(["Apple pie", "a_b"]);
      expect(await titles(where({ kind: "compare", on: done, op: "=", value: false }))).toEqual(["apple tart"]);
      const byDone = notes({ order: { by: { ...done, optional: true, indexed: false }, direction: "desc" } });
      expect(await titles(byDone)).toEqual(["Apple pie", "a_b", "apple tart", "50% off", "axb"]);
    });

    test("hops: a path through a link, either way, with its own condition", async () => {
      const [ada, bob] = [insert("users", { name: "ada" }), insert("users", { name: "bob" })];
      const [n1, n2, n3] = [
        insert("notes", { title: "one", priority: 1 }),
        insert("notes", { title: "two", priority: 2 }),
        insert("notes", { title: "three", priority: 3 }),
      ];
      await commit([ada, bob, n1, n2, n3, link(n1.id, ada.id), link(n2.id, bob.id), link(n3.id, ada.id)]);
      const byAda: Condition = {
        kind: "exists",
        hop: AUTHOR,
        where: { kind: "compare", on: name, op: "=", value: "ada" },
      };
      expect(await titles(where(byAda))).toEqual(["one", "three"]);
      const wroteAboveTwo: Condition = {
        kind: "exists",
        hop: NOTES_OF,
        where: { kind: "compare", on: priority, op: ">", value: 2 },
      };
      const users = await store.data.selectRoots({ entity: "users", where: wroteAboveTwo, children: [] }, unbounded());
      expect(users.map((u) => u.doc.name)).toEqual(["ada"]);
      const nested: Condition = {
        kind: "exists",
        hop: NOTES_OF,
        where: { kind: "and", of: [{ kind: "exists", hop: AUTHOR, where: { kind: "false" } }] },
      };
      expect(await store.data.selectRoots({ entity: "users", where: nested, children: [] }, unbounded())).toEqual([]);
    });
  });

  describe("read budgets", () => {
    test("a read takes rows and documents' bytes from its budget as they arrive, and stops at the first that does not fit", async () => {
      await seedNotes();
      const spent = (read: Promise<unknown>) =>
        read.then(
          () => null,
          (error: ReadBudgetSpent) => error.spent,
        );
      const rows = { rows: 3, bytes: Number.MAX_SAFE_INTEGER };
      expect(await spent(store.data.selectRoots(notes(), rows))).toBe("rows");
      expect(rows.rows).toBe(0);

      const whole = unbounded();
      await store.data.selectRoots(notes(), whole);
      const fiveDocs = Number.MAX_SAFE_INTEGER - whole.bytes;
      expect(fiveDocs).toBeGreaterThan(5 * '{"title":""}'.length);
      const short = { rows: 10, bytes: fiveDocs - 1 };
      expect(await spent(store.data.selectRoots(notes(), short))).toBe("bytes");
      expect(short.rows).toBe(6);
      const exact = { rows: 5, bytes: fiveDocs };
      expect(await store.data.selectRoots(notes(), exact)).toHaveLength(5);
      expect(exact).toEqual({ rows: 0, bytes: 0 });
    });

    test("a level of more rows than one plain read takes is read row by row, and stops the same way", async () => {
      const written = Array.from({ length: 150 }, (_, n) => insert("notes", { title: `n${n}`, priority: n }));
      expect(await commit(written)).toMatchObject({ status: "succeeded" });
      const spent = (read: Promise<unknown>) =>
        read.then(
          () => null,
          (error: ReadBudgetSpent) => error.spent,
        );
      const rows = { rows: 120, bytes: Number.MAX_SAFE_INTEGER };
      expect(await spent(store.data.selectRoots(notes(), rows))).toBe("rows");
      expect(rows.rows).toBe(0);
      const whole = unbounded();
      expect(await titles(notes())).toEqual(written.map((w) => w.doc.title));
      await store.data.selectRoots(notes(), whole);
      const bytes = { rows: 1_000, bytes: Number.MAX_SAFE_INTEGER - whole.bytes - 1 };
      expect(await spent(store.data.selectRoots(notes(), bytes))).toBe("bytes");
      expect(bytes.rows).toBe(1_000 - 149);
    });

    test("a child level takes from the same budget", async () => {
      const ada = insert("users", { name: "ada" });
      const written = [1, 2, 3].map((n) => insert("notes", { title: `p${n}`, priority: n }));
      await commit([ada, ...written, ...written.map((note) => link(note.id, ada.id))]);
      const child = { label: "notes", hop: NOTES_OF, node: notes() };
      const budget = { rows: 2, bytes: Number.MAX_SAFE_INTEGER };
      const read = store.data.selectChildren(child, [ada.id], budget);
      expect(
        await read.then(
          () => null,
          (error: ReadBudgetSpent) => error.spent,
        ),
      ).toBe("rows");
      expect(budget.rows).toBe(0);
    });
  });

  describe("selectChildren", () => {
    test("reads a level for all parents at once, in order per parent; a nested limit counts per parent", async () => {
      const ada = insert("users", { name: "ada" });
      const bob = insert("users", { name: "bob" });
      const eve = insert("users", { name: "eve" });
      const byPriority = new Map([5, 1, 4, 2, 3].map((p) => [p, insert("notes", { title: `p${p}`, priority: p })]));
      const p = (priority: number) => (byPriority.get(priority) as DataWrite & { id: string }).id;
      await commit([
        ada,
        bob,
        eve,
        ...byPriority.values(),
        link(p(5), ada.id),
        link(p(1), ada.id),
        link(p(4), ada.id),
        link(p(2), bob.id),
        link(p(3), bob.id),
      ]);
      const parents = [ada.id, bob.id, eve.id];
      const child = (node: Partial<QueryNode>) => ({ label: "notes", hop: NOTES_OF, node: notes(node) });
      const read = async (node: Partial<QueryNode>) =>
        (await store.data.selectChildren(child(node), parents, unbounded())).map((r) => [r.parentId, r.row.doc.title]);

      expect(await read({})).toEqual([
        [ada.id, "p5"],
        [ada.id, "p1"],
        [ada.id, "p4"],
        [bob.id, "p2"],
        [bob.id, "p3"],
      ]);
      const top2 = await read({
        order: { by: { ...priority, optional: false, indexed: false }, direction: "desc" },
        limit: 2,
      });
      expect(top2.filter(([parent]) => parent === ada.id)).toEqual([
        [ada.id, "p5"],
        [ada.id, "p4"],
      ]);
      expect(top2.filter(([parent]) => parent === bob.id)).toEqual([
        [bob.id, "p3"],
        [bob.id, "p2"],
      ]);
      expect(top2).toHaveLength(4);
      expect(await read({ where: { kind: "compare", on: priority, op: ">", value: 3 } })).toEqual([
        [ada.id, "p5"],
        [ada.id, "p4"],
      ]);

      const authors = await store.data.selectChildren(
        { label: "author", hop: AUTHOR, node: { entity: "users", where: null, children: [] } },
        [p(2)],
        unbounded(),
      );
      expect(authors).toEqual([
        {
          parentId: p(2),
          linkedAt: expect.any(Number),
          row: { id: bob.id, doc: { name: "bob" }, createdAt: bob.at },
        },
      ]);
      expect(await store.data.selectChildren(child({}), [], unbounded())).toEqual([]);
    });

    test("link writes: a has-one end's link is replaced; unlink and delete take links away", async () => {
      const [ada, bob] = [insert("users", { name: "ada" }), insert("users", { name: "bob" })];
      const note = insert("notes", { title: "moved", priority: 1 });
      await commit([ada, bob, note, link(note.id, ada.id)]);
      await commit([link(note.id, bob.id)]);
      const author = { label: "author", hop: AUTHOR, node: { entity: "users", where: null, children: [] } };
      const authorOf = async () =>
        (await store.data.selectChildren(author, [note.id], unbounded())).map((r) => r.row.doc.name as string);
      expect(await authorOf()).toEqual(["bob"]);
      await commit([{ op: "unlink", link: "noteAuthor", sourceId: note.id, targetId: bob.id }]);
      expect(await authorOf()).toEqual([]);
      await commit([link(note.id, ada.id), { op: "delete", entity: "users", id: ada.id }]);
      expect(await authorOf()).toEqual([]);
      expect(await store.data.countRows("users")).toBe(1);
    });
  });

  describe("documents and counts", () => {
    test("readDoc reads one document of its entity; countRows counts an entity's rows", async () => {
      const ids = await seedNotes();
      expect(await store.data.readDoc("notes", ids[1] as string)).toEqual({
        title: "apple tart",
        priority: 3,
        done: false,
      });
      expect(await peer.data.readDoc("notes", ids[1] as string)).toEqual(
        await store.data.readDoc("notes", ids[1] as string),
      );
      expect(await store.data.readDoc("users", ids[1] as string)).toBeNull();
      expect(await store.data.readDoc("notes", crypto.randomUUID())).toBeNull();
      expect(await store.data.countRows("notes")).toBe(5);
      expect(await store.data.countRows("users")).toBe(0);
    });

    test("a replace writes the whole document", async () => {
      const note = insert("notes", { title: "draft", priority: 1, tag: "x" });
      await commit([note]);
      await commit([{ op: "replace", entity: "notes", id: note.id, doc: { title: "final", priority: 2 }, at: at(99) }]);
      expect(await store.data.readDoc("notes", note.id)).toEqual({ title: "final", priority: 2 });
    });
  });

  describe("indexes", () => {
    const email = { entity: "users", label: "email", type: "string", unique: true } as const;

    test("a unique index refuses a duplicate: the execution fails with the reason and keeps none of its writes", async () => {
      await store.data.ensureIndexes([email, { entity: "notes", label: "priority", type: "number", unique: false }]);
      await store.data.ensureIndexes([email]);
      expect(await commit([insert("users", { name: "ada", email: "a@example.com" })])).toMatchObject({
        status: "succeeded",
      });
      const settled = await commit([
        insert("users", { name: "bob", email: "b@example.com" }),
        insert("users", { name: "eve", email: "a@example.com" }),
      ]);
      expect(settled).toMatchObject({
        status: "failed",
        errorCode: "action_failed",
        errorMessage: expect.stringContaining("the writes could not be stored"),
      });
      expect(await store.data.countRows("users")).toBe(1);
      expect(await commit([insert("users", { name: "bob", email: "b@example.com" })])).toMatchObject({
        status: "succeeded",
      });
    });

    test("a unique index that stored rows already break is refused", async () => {
      await commit([insert("users", { nick: "same" }), insert("users", { nick: "same" })]);
      const nick = { entity: "users", label: "nick", type: "string", unique: true } as const;
      await expect(store.data.ensureIndexes([nick])).rejects.toThrow();
    });
  });

  describe("attribute ids", () => {
    test("are created on first use and stable across calls and instances", async () => {
      const first = await store.data.attrIds(["notes.id", "notes.title"], at(1));
      expect(new Set(first.values()).size).toBe(2);
      const again = await peer.data.attrIds(["notes.title", "users.name"], at(2));
      expect(again.get("notes.title")).toBe(first.get("notes.title") as string);
      expect(again.get("notes.id")).toBe(first.get("notes.id") as string);
      expect(again.get("users.name")).toEqual(expect.any(String));
      expect(await store.data.attrIds([], at(3))).toEqual(again);
    });
  });

  describe("change notifications", () => {
    test("reach the other instances sharing the database, not the one that sent them", async () => {
      if (peer === store) {
        // One process serves a SQLite database: there is nobody to tell, and telling nobody succeeds.
        await store.data.listenChanges(() => {
          throw new Error("a change was relayed on a single-process database");
        });
        await store.data.notifyChange(["notes"]);
        return;
      }
      const heardByStore: string[][] = [];
      const heardByPeer: string[][] = [];
      let storeHeard: () => void = () => {};
      const storeHears = new Promise<void>((resolve) => {
        storeHeard = resolve;
      });
      let peerHeard: () => void = () => {};
      const peerHears = new Promise<void>((resolve) => {
        peerHeard = resolve;
      });
      await store.data.listenChanges((entities) => {
        heardByStore.push(entities);
        storeHeard();
      });
      await peer.data.listenChanges((entities) => {
        heardByPeer.push(entities);
        peerHeard();
      });
      await store.data.notifyChange(["notes", "users"]);
      await store.data.notifyChange([]);
      await peerHears;
      // Sent after the store's own: had the store heard itself, that would have come first.
      await peer.data.notifyChange(["users"]);
      await storeHears;
      expect(heardByPeer).toEqual([["notes", "users"]]);
      expect(heardByStore).toEqual([["users"]]);
    });
  });
}
