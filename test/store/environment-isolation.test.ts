import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { DataWrite, QueryNode } from "../../src/store/data.ts";
import { openStore } from "../../src/store/open.ts";
import type { FileRow, TokenRow } from "../../src/store/rows.ts";
import type { Store } from "../../src/store/store.ts";
import { dialects, executeStatements } from "../support/databases.ts";
import { row } from "../support/rows.ts";
import { at, unbounded } from "./fixture.ts";

/**
 * Data, files and user tokens of two environments with colliding keys (the same entity ids, links, paths,
 * token prefixes) on one database: nothing of one is read, changed or deleted through the other
 * (docs/decisions/hosting-layout.md, "Isolation kept true"). On PostgreSQL `peer` is a second instance.
 */
for (const dialect of dialects) {
  describe(`environments are isolated: data, files, tokens (${dialect.name})`, () => {
    let url: string;
    let one: Store;
    let two: Store;
    let peer: Store;
    let close: () => Promise<void>;

    beforeEach(async () => {
      const database = await dialect.create();
      url = database.url;
      const store = await openStore(url);
      const other = dialect.name === "postgres" ? await openStore(url) : store;
      await sql(
        `insert into environments (id, handle, revision, updated_at, created_at, changed) values (2, 'two', 0, 0, 0, 0)`,
      );
      one = store;
      two = store.environment(2);
      peer = other;
      close = async () => {
        await store.close();
        if (other !== store) await other.close();
        await database.drop();
      };
    });
    afterEach(() => close());

    const sql = (statements: string) => executeStatements(url, statements);

    /** The same ids in both environments, different documents; environment 2 has a second note. */
    const seed = () =>
      sql(`
        insert into data_entities (environment, id, entity, doc, created_at, updated_at) values
          (1, 'n1', 'notes', '{"title":"one","priority":1}', 1, 1),
          (1, 'u1', 'users', '{"name":"ann"}', 1, 1),
          (2, 'n1', 'notes', '{"title":"two","priority":2}', 1, 1),
          (2, 'n2', 'notes', '{"title":"three","priority":3}', 2, 2),
          (2, 'u1', 'users', '{"name":"bob"}', 1, 1);
        insert into data_links (environment, link, source_id, target_id, created_at) values
          (1, 'noteAuthor', 'n1', 'u1', 1),
          (2, 'noteAuthor', 'n1', 'u1', 1),
          (2, 'noteAuthor', 'n2', 'u1', 2);`);
    const notes = (where: QueryNode["where"] = null): QueryNode => ({ entity: "notes", where, children: [] });
    const titles = async (store: Store, where: QueryNode["where"] = null) =>
      (await store.data.selectRoots(notes(where), unbounded())).map((r) => r.doc.title);
    const name = { label: "name", type: "string" } as const;
    const title = { label: "title", type: "string" } as const;

    test("data: the same ids are two entities; reads, hops and counts answer each environment's own", async () => {
      await seed();
      expect(await titles(one)).toEqual(["one"]);
      expect(await titles(two)).toEqual(["two", "three"]);
      expect(await one.data.readDoc("notes", "n1")).toEqual({ title: "one", priority: 1 });
      expect(await two.data.readDoc("notes", "n1")).toEqual({ title: "two", priority: 2 });
      expect(await one.data.readDoc("notes", "n2")).toBeNull();
      expect(await one.data.countRows("notes")).toBe(1);
      expect(await two.data.countRows("notes")).toBe(2);

      const author = { label: "author", hop: { link: "noteAuthor", direction: "forward" as const }, node: users() };
      const authors = async (store: Store, ids: string[]) =>
        (await store.data.selectChildren(author, ids, unbounded())).map((r) => [r.parentId, r.row.doc.name]);
      expect(await authors(one, ["n1", "n2"])).toEqual([["n1", "ann"]]);
      expect(await authors(two, ["n1", "n2"])).toEqual([
        ["n1", "bob"],
        ["n2", "bob"],
      ]);
      const notesOf = { label: "notes", hop: { link: "noteAuthor", direction: "reverse" as const }, node: notes() };
      expect((await one.data.selectChildren(notesOf, ["u1"], unbounded())).map((r) => r.row.doc.title)).toEqual([
        "one",
      ]);

      // A condition through a link reaches the linked rows of the same environment only.
      const byBob = {
        kind: "exists",
        hop: author.hop,
        where: { kind: "compare", on: name, op: "=", value: "bob" },
      } as const;
      expect(await titles(one, byBob)).toEqual([]);
      expect(await titles(two, byBob)).toEqual(["two", "three"]);
    });

    test("data: a unique index is unique within an environment; attribute ids are each environment's", async () => {
      await seed();
      await sql(`insert into data_entities (environment, id, entity, doc, created_at, updated_at) values
        (1, 'n3', 'notes', '{"title":"two","priority":9}', 3, 3)`);
      // "two" is in both environments, once in each: the index takes them.
      await one.data.ensureIndexes([{ entity: "notes", ...title, unique: true }]);
      await two.data.ensureIndexes([{ entity: "notes", ...title, unique: true }]);
      const equalTwo = { kind: "compare", on: title, op: "=", value: "two" } as const;
      expect(await titles(one, equalTwo)).toEqual(["two"]);
      expect(await titles(two, equalTwo)).toEqual(["two"]);
      await expect(
        sql(`insert into data_entities (environment, id, entity, doc, created_at, updated_at) values
          (2, 'n9', 'notes', '{"title":"three"}', 9, 9)`),
      ).rejects.toThrow();

      const first = await one.data.attrIds(["notes.title"], at(0));
      const second = await two.data.attrIds(["notes.title", "notes.priority"], at(0));
      expect([...first.keys()]).toEqual(["notes.title"]);
      expect(second.get("notes.title")).not.toBe(first.get("notes.title"));
      expect(await one.data.attrIds(["notes.title"], at(1))).toEqual(first);
      expect((await two.data.attrIds([], at(1))).size).toBe(2);
    });

    test("data: a delete committed in environment 1 leaves environment 2's entity of the same id", async () => {
      await seed();
      const execution = row();
      await one.executions.claim(execution);
      const writes: DataWrite[] = [{ op: "delete", entity: "notes", id: "n1" }];
      await one.executions.settle(execution.id, {
        status: "succeeded",
        output: null,
        errorCode: null,
        errorMessage: null,
        finishedAt: at(1),
        writes,
      });
      expect(await titles(one)).toEqual([]);
      expect(await titles(two)).toEqual(["two", "three"]);
    });

    if (dialect.name === "postgres") {
      test("data: another instance hears a change in the environment it was made in, not in others", async () => {
        const heard: string[] = [];
        await peer.environment(1).data.listenChanges((entities) => heard.push(`1:${entities.join(",")}`));
        await peer.environment(2).data.listenChanges((entities) => heard.push(`2:${entities.join(",")}`));
        await two.data.notifyChange(["notes"]);
        await one.data.notifyChange(["users"]);
        for (let i = 0; i < 100 && heard.length < 2; i++) await Bun.sleep(20);
        await Bun.sleep(50);
        expect(heard.sort()).toEqual(["1:users", "2:notes"]);
      });
    }

    const file = (overrides: Partial<FileRow> = {}): FileRow => ({
      path: "reports/q1.pdf",
      contentType: "application/pdf",
      size: 3,
      sha256: "a".repeat(64),
      ownerKind: "user",
      ownerId: "alice",
      createdAt: at(0),
      updatedAt: at(0),
      executionId: null,
      field: null,
      filename: null,
      blobEnvironment: null,
      ...overrides,
    });

    test("files: the same path is two files; get, list, uploads and deletes stay in their environment", async () => {
      await one.files.put(file());
      await two.files.put(file({ contentType: "text/plain", ownerId: "bob", createdAt: at(5), updatedAt: at(5) }));
      await one.files.put(file({ path: "executions/e1/photo/cat.png", executionId: "e1", field: "photo" }));
      await two.files.put(file({ path: "executions/e1/photo/cat.png", executionId: "e1", field: "photo", size: 9 }));
      // A replace keeps its own environment's created_at, and changes nothing of the other's.
      await one.files.put(file({ size: 4, createdAt: at(7), updatedAt: at(7) }));

      expect(await one.files.get("reports/q1.pdf")).toEqual(file({ size: 4, updatedAt: at(7) }));
      expect(await two.files.get("reports/q1.pdf")).toEqual(
        file({ contentType: "text/plain", ownerId: "bob", createdAt: at(5), updatedAt: at(5) }),
      );
      const paths = async (store: Store, owner?: { kind: "user"; id: string }) =>
        (await store.files.list({ owner, prefix: "", limit: 10 })).map((f) => `${f.path}:${f.ownerId}`);
      expect(await paths(one)).toEqual(["executions/e1/photo/cat.png:alice", "reports/q1.pdf:alice"]);
      expect(await paths(two, { kind: "user", id: "bob" })).toEqual(["reports/q1.pdf:bob"]);
      expect((await one.files.uploadsOf(["e1"])).map((f) => f.size)).toEqual([3]);
      expect((await two.files.uploadsOf(["e1"])).map((f) => f.size)).toEqual([9]);

      await two.files.delete("reports/q1.pdf");
      expect(await two.files.get("reports/q1.pdf")).toBeNull();
      expect((await one.files.get("reports/q1.pdf"))?.size).toBe(4);
    });

    test("files: a used upload grant is the service's, known by its hash in every environment", async () => {
      expect(await one.files.spendUploadGrant("g", at(3_600_000), at(0))).toBe(true);
      expect(await two.files.spendUploadGrant("g", at(3_600_000), at(1))).toBe(false);
    });

    const token = (id: string, overrides: Partial<TokenRow> = {}): TokenRow => ({
      id,
      tokenHash: `hash-${id}`,
      prefix: "act_abcd",
      userId: "alice",
      createdAt: at(0),
      revokedAt: null,
      ...overrides,
    });

    test("tokens: a token is found, listed and revoked only in the environment it was made in", async () => {
      await one.tokens.insert(token("t1"));
      await two.tokens.insert(token("t2", { createdAt: at(1) }));
      await two.tokens.insert(token("t3", { userId: "bob", createdAt: at(2) }));

      expect(await one.tokens.findByHash("hash-t1")).toEqual(token("t1"));
      expect(await two.tokens.findByHash("hash-t1")).toBeNull();
      expect(await peer.environment(2).tokens.findByHash("hash-t1")).toBeNull();
      expect(await peer.environment(2).tokens.findByHash("hash-t2")).toEqual(token("t2", { createdAt: at(1) }));
      expect((await one.tokens.findByHashes(["hash-t1", "hash-t2"])).map((t) => t.id)).toEqual(["t1"]);
      expect((await one.tokens.findByPrefix("act_abcd")).map((t) => t.id)).toEqual(["t1"]);
      expect((await two.tokens.findByPrefix("act_abcd")).map((t) => t.id).sort()).toEqual(["t2", "t3"]);
      expect((await two.tokens.list()).map((t) => t.id)).toEqual(["t2", "t3"]);

      // Another environment's token id or user changes nothing here.
      await two.tokens.revoke("t1", at(9));
      expect(await two.tokens.revokeAllOf("alice", at(9))).toBe(1);
      expect((await one.tokens.findByHash("hash-t1"))?.revokedAt).toBeNull();
      expect((await two.tokens.findByHash("hash-t2"))?.revokedAt).toBe(at(9));
      expect((await two.tokens.findByHash("hash-t3"))?.revokedAt).toBeNull();
      await one.tokens.revoke("t1", at(10));
      expect((await one.tokens.findByHash("hash-t1"))?.revokedAt).toBe(at(10));
    });
  });
}

function users(): QueryNode {
  return { entity: "users", where: null, children: [] };
}
