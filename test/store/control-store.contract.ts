import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { HandleError } from "../../src/lib/handles.ts";
import { ENVIRONMENT_TABLES, type EnvironmentContents, HandleTaken } from "../../src/store/control.ts";
import { LAST_USED_RESOLUTION_MS } from "../../src/store/drizzle/control.ts";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { type Dialect, executeStatements, selectRows, type TestDatabase } from "../support/databases.ts";
import { at } from "./fixture.ts";

/**
 * What every dialect's control store promises (run by test/store/contracts.test.ts). It writes rows of
 * other tables with plain SQL, to check that deleting an environment takes them and only them.
 */
export function controlStoreContract(dialect: Dialect) {
  let database: TestDatabase;
  let store: Store;
  beforeEach(async () => {
    database = await dialect.create();
    store = await openStore(database.url);
  });
  afterEach(async () => {
    await store.close();
    await database.drop();
  });

  const control = () => store.control;

  describe("organizations and environments", () => {
    test("created, found by handle and id, listed; handles unique", async () => {
      const acme = await control().organizations.create("acme", at(0));
      expect(acme).toEqual({ id: expect.any(Number), handle: "acme", createdAt: at(0) });
      expect(await control().organizations.byHandle("acme")).toEqual(acme);
      expect(await control().organizations.byId(acme.id)).toEqual(acme);
      await expect(control().organizations.create("acme", at(1))).rejects.toBeInstanceOf(HandleTaken);
      const beta = await control().organizations.create("beta", at(2));
      expect((await control().organizations.list()).map((o) => o.handle)).toEqual(["acme", "beta"]);

      const prod = await control().environments.create("acme-prod", acme.id, at(3));
      expect(prod).toMatchObject({ handle: "acme-prod", organization: acme.id, activeVersion: null, revision: 0 });
      expect(prod.id).toBeGreaterThan(1);
      expect(await control().environments.byHandle("acme-prod")).toEqual(prod);
      expect(await control().environments.byId(prod.id)).toEqual(prod);
      expect(await control().environments.byHandle("nope")).toBeNull();
      // Environment handles are unique across the service, whatever the organization.
      await expect(control().environments.create("acme-prod", beta.id, at(4))).rejects.toBeInstanceOf(HandleTaken);
      await control().environments.create("beta-dev", beta.id, at(5));
      expect((await control().environments.list(acme.id)).map((e) => e.handle)).toEqual(["acme-prod"]);
      // Single mode's environment (unnamed) is listed last.
      expect((await control().environments.list()).map((e) => e.handle)).toEqual(["acme-prod", "beta-dev", null]);
    });

    test("a handle is a DNS label: lowercase, digits, inner hyphens, at most 63", async () => {
      for (const bad of ["", "Acme", "-acme", "acme-", "ac_me", "ac.me", "a".repeat(64), "acmé"]) {
        await expect(control().organizations.create(bad, at(0))).rejects.toBeInstanceOf(HandleError);
      }
      const org = await control().organizations.create("a".repeat(63), at(0));
      await expect(control().environments.create("x y", org.id, at(0))).rejects.toBeInstanceOf(HandleError);
      expect((await control().environments.create("0-a", org.id, at(0))).handle).toBe("0-a");
      expect(await control().organizations.list()).toHaveLength(1);
    });

    test("changedSince finds creations and activations, in order", async () => {
      const acme = await control().organizations.create("acme", at(0));
      const start = Math.max(0, ...(await control().environments.list()).map((e) => e.changed));
      const prod = await control().environments.create("acme-prod", acme.id, at(1));
      const dev = await control().environments.create("acme-dev", acme.id, at(2));
      expect((await control().environments.changedSince(start)).map((e) => e.handle)).toEqual([
        "acme-prod",
        "acme-dev",
      ]);
      const seen = Math.max(...(await control().environments.changedSince(start)).map((e) => e.changed));
      expect(await control().environments.changedSince(seen)).toEqual([]);

      const releases = store.environment(prod.id).releases;
      await releases.insert(release("v1"));
      expect(await releases.activate("v1", at(3))).toBe(1);
      const changed = await control().environments.changedSince(seen);
      expect(changed).toEqual([expect.objectContaining({ id: prod.id, activeVersion: "v1", revision: 1 })]);
      expect(await control().environments.changedSince(changed[0]?.changed ?? 0)).toEqual([]);
      expect((await control().environments.byId(dev.id))?.activeVersion).toBeNull();
    });

    test("nameSingle names environment 1 once and puts it in the organization", async () => {
      const acme = await control().organizations.create("acme", at(0));
      const before = Math.max(...(await control().environments.list()).map((e) => e.changed));
      const named = await control().environments.nameSingle("acme-main", acme.id);
      expect(named).toMatchObject({ id: 1, handle: "acme-main", organization: acme.id });
      expect((await control().environments.changedSince(before)).map((e) => e.id)).toEqual([1]);
      // Named already: a no-op, whatever it is asked.
      expect(await control().environments.nameSingle("other")).toEqual(named);
      await expect(control().environments.create("acme-main", acme.id, at(1))).rejects.toBeInstanceOf(HandleTaken);
    });
  });

  describe("deleting an environment", () => {
    test("removes every row of it, in batches, and nothing of the others", async () => {
      const acme = await control().organizations.create("acme", at(0));
      const two = await control().environments.create("two", acme.id, at(0));
      const three = await control().environments.create("three", acme.id, at(0));
      for (const env of [two.id, three.id]) {
        await writeRows(env);
        await store.environment(env).releases.insert(release("v1"));
        await control().keys.create({ environment: env }, `hash-${env}`, `prefix-${env}`, at(0));
        await control().grants.grant("alice", { environment: env }, at(0));
      }
      await control().grants.grant("bob", { organization: acme.id }, at(0));
      const orgKey = await control().keys.create({ organization: acme.id }, "hash-org", "prefix-org", at(0));

      const expected: EnvironmentContents = {
        executions: 3,
        executionLogs: 2,
        workflowRuns: 1,
        workflowSteps: 2,
        scheduledInvocations: 1,
        scheduleTicks: 1,
        dataEntities: 2,
        dataLinks: 1,
        dataAttrs: 1,
        files: 2,
        releases: 1,
        apiTokens: 1,
        grants: 1,
        scopedKeys: 1,
        variables: 1,
      };
      expect(await control().environments.describeDelete(two.id)).toEqual(expected);
      expect(await control().environments.describeDelete(three.id)).toEqual(expected);
      expect(await control().environments.describeDelete(999)).toBeNull();

      await store.environment(two.id).releases.activate("v1", at(1));
      const seen = Math.max(...(await control().environments.list()).map((e) => e.changed));
      const dropped: string[] = [];
      const duringDelete: unknown[] = [];
      const removed = await control().environments.delete(two.id, async (files) => {
        dropped.push(...files.map((file) => file.path));
        // Midway, pollers see it out of service.
        duringDelete.push(...(await control().environments.changedSince(seen)));
      });
      expect(duringDelete).toEqual([expect.objectContaining({ id: two.id, activeVersion: null, revision: 2 })]);
      expect(removed).toEqual(expected);
      expect(dropped.sort()).toEqual(["a/one.txt", "b/two.txt"]);
      expect(await control().environments.byId(two.id)).toBeNull();
      expect(await control().environments.describeDelete(two.id)).toBeNull();
      expect(await control().environments.delete(two.id, async () => {})).toBeNull();
      const none = Object.fromEntries(ENVIRONMENT_TABLES.map((name) => [name, 0])) as EnvironmentContents;
      expect(await rowsOf(two.id)).toEqual(none);

      // Environment 3, the organization's grant and key are as they were.
      expect(await control().environments.describeDelete(three.id)).toEqual(expected);
      expect(await rowsOf(three.id)).toEqual(expected);
      expect(await store.environment(three.id).releases.get("v1")).not.toBeNull();
      expect(await control().grants.mayUse("bob", three.id)).toBe(true);
      expect(await control().keys.byId(orgKey.id)).toEqual(orgKey);
      expect(await control().grants.list({ userId: "alice" })).toEqual([
        { userId: "alice", organization: acme.id, environment: three.id, createdAt: at(0) },
      ]);
    });

    test("the sequence of changes never goes back: an environment made after the newest is deleted is seen", async () => {
      const acme = await control().organizations.create("acme", at(0));
      await control().environments.create("old", acme.id, at(0));
      const newest = await control().environments.create("newest", acme.id, at(0));
      const seen = Math.max(...(await control().environments.list()).map((e) => e.changed));
      expect(newest.changed).toBe(seen);
      await control().environments.delete(newest.id, async () => {});
      const made = await control().environments.create("made", acme.id, at(1));
      expect((await control().environments.changedSince(seen)).map((e) => e.handle)).toContain("made");
      expect(made.changed).toBeGreaterThan(seen);
    });

    test("an environment larger than a batch is deleted whole", async () => {
      const acme = await control().organizations.create("acme", at(0));
      const env = await control().environments.create("big", acme.id, at(0));
      const other = await control().environments.create("small", acme.id, at(0));
      // 2,500 entities and executions: more than one batch of each (DELETE_BATCH is 2,000).
      const series = (n: number) => Array.from({ length: n }, (_, i) => i);
      for (const target of [env.id, other.id]) {
        const n = target === env.id ? 2_500 : 3;
        await executeStatements(
          database.url,
          `insert into data_entities (environment, id, entity, doc, created_at, updated_at) values ${series(n)
            .map((i) => `(${target}, 'e${i}', 'order', '{}', 0, 0)`)
            .join(", ")};
           insert into executions (environment, id, request_id, principal_kind, principal_id, action, kind,
             release_version, contract_hash, input_fingerprint, status, created_at, input_bytes, input) values ${series(
               n,
             )
               .map(
                 (i) =>
                   `(${target}, 'x${target}-${i}', 'r${i}', 'user', 'alice', 'a', 'function', 'v1', 'c', 'f', 'succeeded', 0, 2, '{}')`,
               )
               .join(", ")};`,
        );
      }
      const removed = await control().environments.delete(env.id, async () => {});
      expect(removed).toMatchObject({ dataEntities: 2_500, executions: 2_500 });
      expect(await rowsOf(env.id)).toMatchObject({ dataEntities: 0, executions: 0 });
      expect(await rowsOf(other.id)).toMatchObject({ dataEntities: 3, executions: 3 });
    });
  });

  describe("scoped keys", () => {
    test("verified while live, with their scope; last use recorded at most once a minute; revoked", async () => {
      const acme = await control().organizations.create("acme", at(0));
      const prod = await control().environments.create("acme-prod", acme.id, at(0));
      const orgKey = await control().keys.create({ organization: acme.id }, "h-org", "act_o_orgkey01", at(1));
      const envKey = await control().keys.create({ environment: prod.id }, "h-env", "act_e_envkey01", at(2));
      expect(orgKey).toMatchObject({ organization: acme.id, environment: null, lastUsedAt: null, revokedAt: null });

      expect(await control().keys.verify("h-org", at(10))).toEqual({
        id: orgKey.id,
        prefix: "act_o_orgkey01",
        organization: acme.id,
        environment: null,
      });
      expect(await control().keys.verify("h-env", at(10))).toMatchObject({ environment: prod.id, organization: null });
      expect(await control().keys.verify("h-unknown", at(10))).toBeNull();
      expect((await control().keys.byId(orgKey.id))?.lastUsedAt).toBe(at(10));
      await control().keys.verify("h-org", at(10 + LAST_USED_RESOLUTION_MS - 1));
      expect((await control().keys.byId(orgKey.id))?.lastUsedAt).toBe(at(10));
      await control().keys.verify("h-org", at(10 + LAST_USED_RESOLUTION_MS));
      expect((await control().keys.byId(orgKey.id))?.lastUsedAt).toBe(at(10 + LAST_USED_RESOLUTION_MS));

      expect((await control().keys.list({ organization: acme.id })).map((k) => k.id)).toEqual([orgKey.id]);
      expect((await control().keys.list({ environment: prod.id })).map((k) => k.id)).toEqual([envKey.id]);
      expect((await control().keys.list()).map((k) => k.id)).toEqual([orgKey.id, envKey.id]);
      expect(await control().keys.byPrefix("act_e_envkey01")).toEqual([{ ...envKey, lastUsedAt: at(10) }]);

      expect(await control().keys.revoke(envKey.id, at(20))).toBe(true);
      expect(await control().keys.revoke(envKey.id, at(21))).toBe(false);
      expect(await control().keys.verify("h-env", at(22))).toBeNull();
      expect((await control().keys.byId(envKey.id))?.revokedAt).toBe(at(20));
      expect(await control().keys.verify("h-org", at(22))).not.toBeNull();
    });
  });

  describe("grants", () => {
    test("a person may use an environment granted, or every one of an organization granted", async () => {
      const acme = await control().organizations.create("acme", at(0));
      const beta = await control().organizations.create("beta", at(0));
      const prod = await control().environments.create("acme-prod", acme.id, at(0));
      const dev = await control().environments.create("acme-dev", acme.id, at(0));
      const other = await control().environments.create("beta-prod", beta.id, at(0));

      expect(await control().grants.grant("alice", { environment: prod.id }, at(1))).toBe(true);
      expect(await control().grants.grant("alice", { environment: prod.id }, at(2))).toBe(false);
      expect(await control().grants.grant("bob", { organization: acme.id }, at(3))).toBe(true);
      expect(await control().grants.mayUse("alice", prod.id)).toBe(true);
      expect(await control().grants.mayUse("alice", dev.id)).toBe(false);
      expect(await control().grants.mayUse("bob", prod.id)).toBe(true);
      expect(await control().grants.mayUse("bob", dev.id)).toBe(true);
      // Environments created after the grant are covered too; another organization's are not.
      const later = await control().environments.create("acme-later", acme.id, at(4));
      expect(await control().grants.mayUse("bob", later.id)).toBe(true);
      expect(await control().grants.mayUse("bob", other.id)).toBe(false);
      expect(await control().grants.mayUse("carol", prod.id)).toBe(false);
      // Single mode's environment belongs to no organization: nothing can grant it, and asking is a refusal.
      await expect(control().grants.grant("alice", { environment: 1 }, at(5))).rejects.toMatchObject({
        code: "invalid_request",
        message: expect.stringContaining("belongs to no organization"),
      });

      expect(await control().grants.list({ organization: acme.id })).toEqual([
        { userId: "bob", organization: acme.id, environment: 0, createdAt: at(3) },
        { userId: "alice", organization: acme.id, environment: prod.id, createdAt: at(1) },
      ]);
      expect((await control().grants.list({ environment: prod.id })).map((g) => g.userId)).toEqual(["alice"]);
      expect((await control().grants.list({ userId: "bob" })).map((g) => g.environment)).toEqual([0]);
    });

    test("revoking ends the person's tokens where no other grant still lets them in", async () => {
      const acme = await control().organizations.create("acme", at(0));
      const prod = await control().environments.create("acme-prod", acme.id, at(0));
      const dev = await control().environments.create("acme-dev", acme.id, at(0));
      await control().grants.grant("alice", { organization: acme.id }, at(1));
      await control().grants.grant("alice", { environment: prod.id }, at(1));
      await executeStatements(
        database.url,
        `insert into api_tokens (environment, id, token_hash, prefix, user_id, created_at) values
           (${prod.id}, 't-prod', 'h1', 'p1', 'alice', 0), (${dev.id}, 't-dev', 'h2', 'p2', 'alice', 0),
           (${dev.id}, 't-bob', 'h3', 'p3', 'bob', 0), (1, 't-single', 'h4', 'p4', 'alice', 0)`,
      );
      const revokedTokens = async () =>
        (await selectRows(database.url, "select id from api_tokens where revoked_at is not null order by id")).map(
          (row) => row.id,
        );

      // Still granted prod by the organization's grant: nothing revoked.
      expect(await control().grants.revoke("alice", { environment: prod.id }, at(2))).toEqual({
        revoked: true,
        tokens: 0,
      });
      expect(await control().grants.mayUse("alice", prod.id)).toBe(true);
      expect(await revokedTokens()).toEqual([]);

      await control().grants.grant("alice", { environment: prod.id }, at(3));
      // The organization's grant gone, prod still granted alone: only dev's token goes.
      expect(await control().grants.revoke("alice", { organization: acme.id }, at(4))).toEqual({
        revoked: true,
        tokens: 1,
      });
      expect(await revokedTokens()).toEqual(["t-dev"]);
      expect(await control().grants.mayUse("alice", dev.id)).toBe(false);
      expect(await control().grants.mayUse("alice", prod.id)).toBe(true);

      expect(await control().grants.revoke("alice", { environment: prod.id }, at(5))).toEqual({
        revoked: true,
        tokens: 1,
      });
      expect(await revokedTokens()).toEqual(["t-dev", "t-prod"]);
      expect(await control().grants.revoke("alice", { environment: prod.id }, at(6))).toEqual({
        revoked: false,
        tokens: 0,
      });
    });
  });

  /** A release row of `version` (its content is not read here). */
  function release(version: string) {
    return {
      version,
      bundleHash: "b".repeat(64),
      manifest: {},
      bundle: "export {}",
      createdAt: at(0),
      publishedBy: null,
    };
  }

  /**
   * One environment's rows of every table (the same keys in every environment: what a table keyed without
   * the environment would refuse): 3 executions, 1 of them a run with 2 steps, 2 log lines, ….
   */
  async function writeRows(env: number) {
    const x = (id: string) => `x${env}-${id}`;
    await executeStatements(
      database.url,
      `insert into executions (environment, id, request_id, principal_kind, principal_id, action, kind,
         release_version, contract_hash, input_fingerprint, status, created_at, input_bytes, input) values
         (${env}, '${x("1")}', 'r1', 'user', 'alice', 'a', 'function', 'v1', 'c', 'f', 'succeeded', 0, 2, '{}'),
         (${env}, '${x("2")}', 'r2', 'user', 'alice', 'a', 'function', 'v1', 'c', 'f', 'succeeded', 0, 2, '{}'),
         (${env}, '${x("run")}', 'r3', 'user', 'alice', 'w', 'workflow', 'v1', 'c', 'f', 'running', 0, 2, '{}');
       insert into execution_logs (environment, execution_id, seq, at, level, line) values
         (${env}, '${x("1")}', 0, 0, 'info', 'one'), (${env}, '${x("1")}', 1, 0, 'info', 'two');
       insert into workflow_runs (environment, id, request_id, workflow, release_version, principal_kind,
         principal_id, status, wake_at, created_at, updated_at, input_bytes, input) values
         (${env}, '${x("run")}', 'r3', 'w', 'v1', 'user', 'alice', 'running', 0, 0, 0, 2, '{}');
       insert into workflow_steps (environment, run_id, name, seq, kind, status, attempts) values
         (${env}, '${x("run")}', 'charge', 0, 'step', 'succeeded', 1),
         (${env}, '${x("run")}', 'ship', 1, 'step', 'succeeded', 1);
       insert into scheduled_invocations (environment, id, principal_kind, principal_id, action, input,
         request_id, due_at, scheduled_by, status, created_at, updated_at) values
         (${env}, '${x("s")}', 'user', 'alice', 'a', '{}', 'r4', 0, '${x("1")}', 'pending', 0, 0);
       insert into schedule_ticks (environment, name, last_tick_at, lease_expires_at) values (${env}, 'nightly', 0, 0);
       insert into data_entities (environment, id, entity, doc, created_at, updated_at) values
         (${env}, 'o1', 'order', '{}', 0, 0), (${env}, 'c1', 'customer', '{}', 0, 0);
       insert into data_links (environment, link, source_id, target_id, created_at) values
         (${env}, 'order.customer', 'o1', 'c1', 0);
       insert into data_attrs (environment, id, entity, label, created_at) values (${env}, 'a1', 'order', 'total', 0);
       insert into files (environment, path, content_type, owner_kind, owner_id, created_at, updated_at) values
         (${env}, 'a/one.txt', 'text/plain', 'user', 'alice', 0, 0),
         (${env}, 'b/two.txt', 'text/plain', 'user', 'alice', 0, 0);
       insert into api_tokens (environment, id, token_hash, prefix, user_id, created_at) values
         (${env}, '${x("t")}', 'hash-${env}', 'act_u_${env}', 'alice', 0);
       insert into variables (environment, name, secret, value, updated_at) values (${env}, 'REGION', false, 'eu', 0);`,
    );
  }

  /** Each table's rows of environment `env`, counted with plain SQL. */
  async function rowsOf(env: number): Promise<EnvironmentContents> {
    const tables: Record<keyof EnvironmentContents, string> = {
      executions: "executions",
      executionLogs: "execution_logs",
      workflowRuns: "workflow_runs",
      workflowSteps: "workflow_steps",
      scheduledInvocations: "scheduled_invocations",
      scheduleTicks: "schedule_ticks",
      dataEntities: "data_entities",
      dataLinks: "data_links",
      dataAttrs: "data_attrs",
      files: "files",
      releases: "releases",
      apiTokens: "api_tokens",
      grants: "grants",
      scopedKeys: "scoped_keys",
      variables: "variables",
    };
    const counts: Partial<EnvironmentContents> = {};
    for (const [name, table] of Object.entries(tables)) {
      const [row] = await selectRows(database.url, `select count(*) as n from ${table} where environment = ${env}`);
      counts[name as keyof EnvironmentContents] = Number(row?.n);
    }
    return counts as EnvironmentContents;
  }
}
