import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createScopedKey, revokeScopedKey, verifyScopedKey } from "../../src/auth/scoped-keys.ts";
import { createUserToken, SERVICE_KEY_PREFIX } from "../../src/auth/tokens.ts";
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

  test("a key names its scope by its prefix, verifies to it while live, and is revoked by id or prefix", async () => {
    const acme = await store.control.organizations.create("acme", 0);
    const prod = await store.control.environments.create("acme-prod", acme.id, 0);
    const org = await createScopedKey(store, { organization: acme.id }, 1);
    const env = await createScopedKey(store, { environment: prod.id }, 2);
    expect(org.key).toMatch(/^act_o_[A-Za-z0-9_-]{43}$/);
    expect(env.key).toMatch(/^act_e_[A-Za-z0-9_-]{43}$/);
    expect(org.row.prefix).toBe(org.key.slice(0, 14));

    expect(await verifyScopedKey(store, org.key, 3)).toEqual({
      id: org.row.id,
      prefix: org.row.prefix,
      organization: acme.id,
      environment: null,
    });
    expect(await verifyScopedKey(store, env.key, 3)).toMatchObject({ environment: prod.id });
    // Another key of the same shape, a user token, a service key: not a stored key.
    expect(await verifyScopedKey(store, `${env.key.slice(0, -1)}x`, 3)).toBeNull();
    expect(await verifyScopedKey(store, (await createUserToken(store, "alice")).token, 3)).toBeNull();
    expect(await verifyScopedKey(store, `${SERVICE_KEY_PREFIX}whatever`, 3)).toBeNull();

    expect((await revokeScopedKey(store, env.row.prefix, 4)).id).toBe(env.row.id);
    expect(await verifyScopedKey(store, env.key, 5)).toBeNull();
    expect((await revokeScopedKey(store, org.row.id, 6)).revokedAt).toBe(6);
    expect(await verifyScopedKey(store, org.key, 7)).toBeNull();
    await expect(revokeScopedKey(store, org.row.id, 8)).rejects.toBeInstanceOf(PublicError);
    await expect(revokeScopedKey(store, "act_e_", 8)).rejects.toBeInstanceOf(PublicError);
  });
});
