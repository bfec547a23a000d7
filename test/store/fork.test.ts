import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { HandleError } from "../../src/lib/handles.ts";
import { HandleTaken } from "../../src/store/control.ts";
import { FORKING } from "../../src/store/drizzle/fork-tables.ts";
import { openStore } from "../../src/store/open.ts";
import type { EnvironmentRow } from "../../src/store/rows.ts";
import type { Store } from "../../src/store/store.ts";
import { dialects, executeStatements, selectRows, type TestDatabase } from "../support/databases.ts";
import { at, unbounded } from "./fixture.ts";

/**
 * EnvironmentStore.fork on both databases (docs/decisions/forks.md): what is copied and what is not, the
 * fork's release and schedules, isolation afterwards, forks of forks, deleting the source, the snapshot.
 * Rows of tables the fork must leave behind are written with plain SQL, as the control store's contract does.
 */
for (const dialect of dialects) {
  describe(`environment forks (${dialect.name})`, () => {
    let database: TestDatabase;
    let store: Store;
    let organization: number;
    let source: EnvironmentRow;
    beforeEach(async () => {
      database = await dialect.create();
      store = await openStore(database.url);
      organization = (await store.control.organizations.create("acme", at(0))).id;
      source = await store.control.environments.create("acme-prod", organization, at(0));
    });
    afterEach(async () => {
      await store.close();
      await database.drop();
    });

    const environments = () => store.control.environments;
    const fork = (handle: string, options: { data?: boolean; secrets?: boolean; expiresAt?: number | null } = {}) =>
      environments().fork(source.id, {
        handle,
        organization,
        at: at(100),
        data: options.data ?? true,
        secrets: options.secrets ?? false,
        expiresAt: options.expiresAt ?? null,
      });
    const rows = (sql: string) => selectRows(database.url, sql);
    const count = async (table: string, env: number) =>
      Number((await rows(`select count(*) as n from ${table} where environment = ${env}`))[0]?.n);
    const truth = dialect.name === "postgres" ? "true" : "1";
    const untruth = dialect.name === "postgres" ? "false" : "0";

    async function publish(env: number, version: string, createdAt: number) {
      await store.environment(env).releases.insert({
        version,
        bundleHash: version.repeat(64).slice(0, 64),
        manifest: { version },
        bundle: `export const v = "${version}"`,
        createdAt,
        publishedBy: "ci@host",
      });
    }

    /** The source: two releases (v2 active), variables, data, files, and rows of every table not copied. */
    async function fillSource() {
      await publish(source.id, "v1", at(1));
      await publish(source.id, "v2", at(2));
      await store.environment(source.id).releases.activate("v2", at(3));
      const env = source.id;
      const x = (id: string) => `x${env}-${id}`;
      await executeStatements(
        database.url,
        `insert into variables (environment, name, secret, value, key_id, updated_at, updated_by) values
           (${env}, 'REGION', ${untruth}, 'eu', null, 5, 'user:alice'),
           (${env}, 'STRIPE_KEY', ${truth}, 'sealed:AAAA', 'key-1', 6, 'service:k1');
         insert into data_attrs (environment, id, entity, label, created_at) values (${env}, 'a1', 'order', 'total', 0);
         insert into data_entities (environment, id, entity, doc, created_at, updated_at) values
           (${env}, 'o1', 'order', '{"total":10}', 1, 1), (${env}, 'c1', 'customer', '{"name":"Ada"}', 2, 2),
           (${env}, 'c2', 'customer', '{"name":"Bob"}', 3, 3);
         insert into data_links (environment, link, source_id, target_id, created_at) values
           (${env}, 'order.customer', 'o1', 'c1', 4);
         insert into files (environment, path, content_type, size, sha256, owner_kind, owner_id, created_at, updated_at) values
           (${env}, 'a/one.txt', 'text/plain', 3, 'abc', 'user', 'alice', 0, 0),
           (${env}, 'b/two.txt', 'text/plain', 3, 'def', 'user', 'bob', 0, 0);
         insert into executions (environment, id, request_id, principal_kind, principal_id, action, kind,
           release_version, contract_hash, input_fingerprint, status, created_at, input_bytes, input) values
           (${env}, '${x("1")}', 'r1', 'user', 'alice', 'a', 'function', 'v1', 'c', 'f', 'succeeded', 0, 2, '{}'),
           (${env}, '${x("run")}', 'r3', 'user', 'alice', 'w', 'workflow', 'v1', 'c', 'f', 'running', 0, 2, '{}');
         insert into execution_logs (environment, execution_id, seq, at, level, line) values
           (${env}, '${x("1")}', 0, 0, 'info', 'one');
         insert into workflow_runs (environment, id, request_id, workflow, release_version, principal_kind,
           principal_id, status, wake_at, created_at, updated_at, input_bytes, input) values
           (${env}, '${x("run")}', 'r3', 'w', 'v1', 'user', 'alice', 'running', 0, 0, 0, 2, '{}');
         insert into workflow_steps (environment, run_id, name, seq, kind, status, attempts) values
           (${env}, '${x("run")}', 'charge', 0, 'step', 'succeeded', 1);
         insert into scheduled_invocations (environment, id, principal_kind, principal_id, action, input,
           request_id, due_at, scheduled_by, status, created_at, updated_at) values
           (${env}, '${x("s")}', 'user', 'alice', 'a', '{}', 'r4', 0, '${x("1")}', 'pending', 0, 0);
         insert into schedule_ticks (environment, name, last_tick_at, lease_expires_at) values (${env}, 'nightly', 0, 0);
         insert into api_tokens (environment, id, token_hash, prefix, user_id, created_at) values
           (${env}, '${x("t")}', 'hash-${env}', 'act_u_${env}', 'alice', 0);`,
      );
      await store.control.keys.create({ environment: env }, "key-hash", "prefix", at(0));
      await store.control.grants.grant("alice", { environment: env }, at(0));
    }

    const NOT_COPIED = [
      "executions",
      "execution_logs",
      "workflow_runs",
      "workflow_steps",
      "scheduled_invocations",
      "schedule_ticks",
      "api_tokens",
      "grants",
      "scoped_keys",
    ];

    test("copies releases, active release, plain variables and data; not executions, runs, logs, ticks, tokens, grants, keys", async () => {
      await fillSource();
      const seen = Math.max(...(await environments().list()).map((e) => e.changed));
      const { environment, copied } = await fork("acme-pr-42", { expiresAt: at(1000) });
      expect(copied).toEqual({ releases: 2, variables: 1, entities: 3, links: 1, files: 2 });
      expect(environment).toMatchObject({
        handle: "acme-pr-42",
        organization,
        activeVersion: "v2",
        revision: 1,
        updatedAt: at(100),
        createdAt: at(100),
        nextTickAt: null,
        forkedFrom: "acme-prod",
        expiresAt: at(1000),
        schedulesPaused: true,
      });
      expect(await environments().byHandle("acme-pr-42")).toEqual(environment);
      expect(await environments().changedSince(seen)).toEqual([environment]);

      const forked = store.environment(environment.id);
      expect(await forked.releases.active()).toEqual({ version: "v2", revision: 1, activatedAt: at(100) });
      expect(await forked.releases.list()).toEqual(await store.environment(source.id).releases.list());
      expect(await forked.releases.get("v1")).toEqual({
        ...(await store.environment(source.id).releases.get("v1")),
        environment: environment.id,
      } as never);

      const variables = await rows(
        `select name, value, key_id, updated_at, updated_by from variables where environment = ${environment.id} and secret = ${untruth}`,
      );
      expect(variables.map((v): Record<string, unknown> => ({ ...v, updated_at: Number(v.updated_at) }))).toEqual([
        { name: "REGION", value: "eu", key_id: null, updated_at: 5, updated_by: "user:alice" },
      ]);
      expect(await count("variables", environment.id)).toBe(1);

      expect(await forked.data.readDoc("order", "o1")).toEqual({ total: 10 });
      expect(await forked.data.countRows("customer")).toBe(2);
      expect(await forked.data.attrIds([], at(0))).toEqual(new Map([["order.total", "a1"]]));
      const linked = await forked.data.selectChildren(
        {
          label: "customer",
          hop: { link: "order.customer", direction: "forward" },
          node: { entity: "customer", where: null, children: [] },
        },
        ["o1"],
        unbounded(),
      );
      expect(linked.map((l) => [l.parentId, l.row.id, l.linkedAt])).toEqual([["o1", "c1", 4]]);

      const files = await rows(
        `select path, size, sha256, owner_id, blob_environment from files where environment = ${environment.id} order by path`,
      );
      expect(files.map((f): Record<string, unknown> => ({ ...f, size: Number(f.size) }))).toEqual([
        { path: "a/one.txt", size: 3, sha256: "abc", owner_id: "alice", blob_environment: source.id },
        { path: "b/two.txt", size: 3, sha256: "def", owner_id: "bob", blob_environment: source.id },
      ]);
      for (const table of NOT_COPIED) expect({ table, n: await count(table, environment.id) }).toEqual({ table, n: 0 });
      // The source is as it was.
      expect(await store.environment(source.id).releases.active()).toMatchObject({ version: "v2", revision: 1 });
      for (const table of NOT_COPIED) expect(await count(table, source.id)).toBeGreaterThan(0);
    });

    test("secrets only when asked, their sealed values as they were; no data without data", async () => {
      await fillSource();
      const { environment, copied } = await fork("acme-pr-1", { data: false, secrets: true });
      expect(copied).toEqual({ releases: 2, variables: 2, entities: 0, links: 0, files: 0 });
      const secrets = await rows(
        `select name, value, key_id from variables where environment = ${environment.id} and secret = ${truth}`,
      );
      expect(secrets).toEqual([{ name: "STRIPE_KEY", value: "sealed:AAAA", key_id: "key-1" }]);
      for (const table of ["data_entities", "data_links", "data_attrs", "files"]) {
        expect(await count(table, environment.id)).toBe(0);
      }
    });

    test("a source with no active release forks to none; an unknown source, a taken or bad handle are refused", async () => {
      await publish(source.id, "v1", at(1));
      const { environment } = await fork("acme-pr-2");
      expect(environment).toMatchObject({ activeVersion: null, revision: 0 });
      expect(await store.environment(environment.id).releases.active()).toEqual({
        version: null,
        revision: 0,
        activatedAt: null,
      });

      await expect(fork("acme-prod")).rejects.toBeInstanceOf(HandleTaken);
      await expect(fork("acme-pr-2")).rejects.toBeInstanceOf(HandleTaken);
      await expect(fork("Not A Label")).rejects.toBeInstanceOf(HandleError);
      const unknown = environments().fork(9999, {
        handle: "acme-pr-3",
        organization,
        at: at(0),
        data: true,
        secrets: false,
        expiresAt: null,
      });
      await expect(unknown).rejects.toMatchObject({ code: "environment_not_found" });
      expect((await environments().list()).map((e) => e.handle)).toEqual(["acme-pr-2", "acme-prod", null]);
      expect(await count("releases", environment.id)).toBe(1);
    });

    test("fork and source are apart afterwards: writes, updates, deletes, links, attributes, unique indexes", async () => {
      await fillSource();
      const unique = { entity: "customer", label: "name", type: "string", unique: true } as const;
      await store.environment(source.id).data.ensureIndexes([unique]);
      const { environment } = await fork("acme-pr-5");
      const f = environment.id;
      const s = source.id;
      await executeStatements(
        database.url,
        `update data_entities set doc = '{"total":99}' where environment = ${f} and id = 'o1';
         delete from data_entities where environment = ${s} and id = 'c2';
         insert into data_entities (environment, id, entity, doc, created_at, updated_at) values
           (${f}, 'c3', 'customer', '{"name":"Cy"}', 9, 9);
         delete from data_links where environment = ${f};
         insert into data_links (environment, link, source_id, target_id, created_at) values (${f}, 'order.customer', 'o1', 'c3', 9);
         insert into data_attrs (environment, id, entity, label, created_at) values (${s}, 'a2', 'order', 'note', 9);
         update files set size = 5 where environment = ${s} and path = 'a/one.txt';
         delete from files where environment = ${f} and path = 'b/two.txt';`,
      );
      const [source_, fork_] = [store.environment(s).data, store.environment(f).data];
      expect(await source_.readDoc("order", "o1")).toEqual({ total: 10 });
      expect(await fork_.readDoc("order", "o1")).toEqual({ total: 99 });
      expect(await source_.readDoc("customer", "c2")).toBeNull();
      expect(await fork_.readDoc("customer", "c2")).toEqual({ name: "Bob" });
      expect(await source_.readDoc("customer", "c3")).toBeNull();
      const links = async (env: number) =>
        (await rows(`select target_id from data_links where environment = ${env}`)).map((r) => r.target_id);
      expect(await links(s)).toEqual(["c1"]);
      expect(await links(f)).toEqual(["c3"]);
      expect([...(await source_.attrIds([], at(0))).keys()].sort()).toEqual(["order.note", "order.total"]);
      expect([...(await fork_.attrIds([], at(0))).keys()]).toEqual(["order.total"]);
      const sizes = async (env: number) =>
        (await rows(`select path, size from files where environment = ${env} order by path`)).map(
          (r) => `${r.path}:${r.size}`,
        );
      expect(await sizes(s)).toEqual(["a/one.txt:5", "b/two.txt:3"]);
      expect(await sizes(f)).toEqual(["a/one.txt:3"]);
      // The unique index holds within each environment: Bob again in the fork is refused, Bob again in the source (deleted there) is not.
      const bob = (env: number, id: string) =>
        executeStatements(
          database.url,
          `insert into data_entities (environment, id, entity, doc, created_at, updated_at) values (${env}, '${id}', 'customer', '{"name":"Bob"}', 9, 9)`,
        );
      await expect(bob(f, "c9")).rejects.toThrow();
      await bob(s, "c9");
      expect(await source_.countRows("customer")).toBe(2);
      expect(await fork_.countRows("customer")).toBe(3);
    });

    test("a fork of a fork names the first source's storage; deleting the source leaves its forks whole", async () => {
      await fillSource();
      const first = (await fork("acme-pr-6")).environment;
      const second = await environments().fork(first.id, {
        handle: "acme-pr-7",
        organization,
        at: at(200),
        data: true,
        secrets: false,
        expiresAt: null,
      });
      expect(second.environment).toMatchObject({ forkedFrom: "acme-pr-6", activeVersion: "v2", revision: 1 });
      expect(second.copied).toEqual({ releases: 2, variables: 1, entities: 3, links: 1, files: 2 });
      const blobs = async (env: number) =>
        (await rows(`select blob_environment from files where environment = ${env}`)).map((r) => r.blob_environment);
      expect(await blobs(second.environment.id)).toEqual([source.id, source.id]);

      const dropped: string[] = [];
      await environments().delete(source.id, async (files) => {
        dropped.push(...files.map((file) => file.path));
      });
      expect(dropped.sort()).toEqual(["a/one.txt", "b/two.txt"]);
      expect(await environments().byId(source.id)).toBeNull();
      for (const env of [first, second.environment]) {
        expect(await environments().byId(env.id)).toMatchObject({ activeVersion: "v2", forkedFrom: env.forkedFrom });
        expect(await count("releases", env.id)).toBe(2);
        expect(await count("variables", env.id)).toBe(1);
        expect(await count("data_entities", env.id)).toBe(3);
        expect(await count("data_links", env.id)).toBe(1);
        expect(await blobs(env.id)).toEqual([source.id, source.id]);
      }
      expect(await count("variables", source.id)).toBe(0);
    });

    test("a fork is unseen until complete; one left by a stopped copy is removed by the next fork", async () => {
      await publish(source.id, "v1", at(1));
      const started = Math.max(...(await environments().list()).map((e) => e.changed));
      // What a copy stopped midway leaves: the fork's row out of sight, some of its rows, an old heartbeat.
      await executeStatements(
        database.url,
        `insert into environments (id, handle, organization, updated_at, created_at, changed, schedules_paused)
           values (500, 'acme-pr-8', ${organization}, 0, 0, ${FORKING}, ${truth});
         insert into data_entities (environment, id, entity, doc, created_at, updated_at) values (500, 'o1', 'order', '{}', 0, 0);
         insert into variables (environment, name, secret, value, updated_at) values (500, 'A', ${untruth}, 'x', 0);`,
      );
      expect(await environments().byHandle("acme-pr-8")).toBeNull();
      expect(await environments().byId(500)).toBeNull();
      expect(await environments().present([500, source.id])).toEqual([source.id]);
      expect((await environments().list()).map((e) => e.handle)).toEqual(["acme-prod", null]);
      expect(await environments().changedSince(0)).not.toContainEqual(expect.objectContaining({ id: 500 }));

      const { environment } = await fork("acme-pr-8");
      expect(environment.id).not.toBe(500);
      expect(environment.changed).toBeGreaterThan(started);
      expect(await count("data_entities", 500)).toBe(0);
      expect(await count("variables", 500)).toBe(0);
      expect(await rows("select id from environments where id = 500")).toEqual([]);
    });

    test("one snapshot: a change committed into the source during the fork is wholly in it or wholly out", async () => {
      // Enough rows that the copy takes several slices (SQLite) or a while (PostgreSQL).
      const n = 5_000;
      const series =
        dialect.name === "postgres"
          ? `generate_series(1, ${n}) as g(i)`
          : `(with recursive s(i) as (select 1 union all select i + 1 from s where i < ${n}) select i from s) as g`;
      await executeStatements(
        database.url,
        `insert into data_entities (environment, id, entity, doc, created_at, updated_at)
             select ${source.id}, 'e' || i, 'item', '{"owner":"c1"}', i, i from ${series};
           insert into data_links (environment, link, source_id, target_id, created_at)
             select ${source.id}, 'item.owner', 'e' || i, 'c1', i from ${series};`,
      );
      const forking = fork("acme-pr-9");
      let settled = false;
      forking.finally(() => {
        settled = true;
      });
      // The copy under way: SQLite's slices of the fork's entities are committed one by one; PostgreSQL's
      // transaction holds the fork's row from its first statement, where its snapshot is taken.
      while (!settled) {
        const under =
          dialect.name === "postgres"
            ? (
                await rows(
                  `select count(*) as n from pg_locks l join pg_class c on c.oid = l.relation where c.relname = 'environments' and l.mode = 'RowShareLock'`,
                )
              )[0]?.n
            : (await rows(`select count(*) as n from data_entities where environment <> ${source.id}`))[0]?.n;
        if (Number(under) > 0) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      // On SQLite the copy goes in slices with the event loop free between them: the move lands midway.
      if (dialect.name === "sqlite") expect(settled).toBe(false);
      // One transaction moves item e1 from c1 to c2: its document and its link.
      await executeStatements(
        database.url,
        `begin;
           update data_entities set doc = '{"owner":"c2"}' where environment = ${source.id} and id = 'e1';
           update data_links set target_id = 'c2' where environment = ${source.id} and source_id = 'e1';
           commit;`,
      );
      const { environment, copied } = await forking;
      expect(copied).toMatchObject({ entities: n, links: n });
      const doc = await store.environment(environment.id).data.readDoc("item", "e1");
      const [link] = await rows(
        `select target_id from data_links where environment = ${environment.id} and source_id = 'e1'`,
      );
      expect([{ owner: "c1" }, { owner: "c2" }]).toContainEqual(doc as { owner: string });
      expect(link?.target_id).toBe(doc?.owner);
      // The source has the move.
      expect(await store.environment(source.id).data.readDoc("item", "e1")).toEqual({ owner: "c2" });
    }, 30_000);
  });
}
