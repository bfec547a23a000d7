import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createScopedKey, revokeScopedKey, scopedKeyPrincipal } from "../../src/auth/scoped-keys.ts";
import { hashSecret } from "../../src/auth/tokens.ts";
import { PublicError } from "../../src/lib/errors.ts";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";

const [sqlite] = dialects;

describe("keys of organizations and environments", () => {
  let database: TestDatabase;
  let store: Store;
  beforeEach(async () => {
    database = await (sqlite as (typeof dialects)[number]).create();
    store = await openStore(database.url);
  });
  afterEach(async () => {
    await store.close();
    await database.drop();
  });

  test("a key names its scope by its prefix, is administrator where its scope covers, and is revoked by id or prefix", async () => {
    const acme = await store.control.organizations.create("acme", 0);
    const prod = await store.control.environments.create("acme-prod", acme.id, 0);
    const dev = await store.control.environments.create("acme-dev", acme.id, 0);
    const other = await store.control.environments.create(
      "beta-prod",
      (await store.control.organizations.create("beta", 0)).id,
      0,
    );
    const org = await createScopedKey(store, { organization: acme.id }, 1);
    const env = await createScopedKey(store, { environment: prod.id }, 2);
    expect(org.key).toMatch(/^act_o_[A-Za-z0-9_-]{43}$/);
    expect(env.key).toMatch(/^act_e_[A-Za-z0-9_-]{43}$/);
    expect(org.row.prefix).toBe(org.key.slice(0, 14));

    const callerIn = (id: number, key: string, at = 3) =>
      scopedKeyPrincipal(store.environment(id), hashSecret(key), at);
    const asOrg = { kind: "service" as const, id: `key-${org.row.id}` };
    const asEnv = { kind: "service" as const, id: `key-${env.row.id}` };
    // The organization's key in each of its environments; the environment's key in it alone.
    expect(await callerIn(prod.id, org.key)).toEqual(asOrg);
    expect(await callerIn(dev.id, org.key)).toEqual(asOrg);
    expect(await callerIn(prod.id, env.key)).toEqual(asEnv);
    for (const elsewhere of [dev.id, other.id, 1]) expect(await callerIn(elsewhere, env.key)).toBeNull();
    for (const elsewhere of [other.id, 1]) expect(await callerIn(elsewhere, org.key)).toBeNull();
    // Another key of the same shape is nobody.
    expect(await callerIn(prod.id, `${env.key.slice(0, -1)}x`)).toBeNull();

    expect((await revokeScopedKey(store, env.row.prefix, 4)).id).toBe(env.row.id);
    expect(await callerIn(prod.id, env.key, 5)).toBeNull();
    expect((await revokeScopedKey(store, org.row.id, 6)).revokedAt).toBe(6);
    expect(await callerIn(prod.id, org.key, 7)).toBeNull();
    await expect(revokeScopedKey(store, org.row.id, 8)).rejects.toBeInstanceOf(PublicError);
    await expect(revokeScopedKey(store, "act_e_", 8)).rejects.toBeInstanceOf(PublicError);
  });
});
