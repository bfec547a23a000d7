import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashSecret } from "../../src/auth/tokens.ts";
import { DiskStorage } from "../../src/files/disk.ts";
import { storageFor } from "../../src/files/environment-storage.ts";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { cli } from "../support/cli.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";

// Every command is a process; on a loaded machine a cold `bun` start alone can take seconds.
setDefaultTimeout(90_000);

for (const dialect of dialects) {
  describe(`CLI org, env, key --org/--env (${dialect.name})`, () => {
    let database: TestDatabase;
    let dataDir: string;
    let env: Record<string, string>;
    beforeAll(async () => {
      database = await dialect.create();
      dataDir = mkdtempSync(join(tmpdir(), "actuate-control-cli-"));
      env = { DATA_DIR: dataDir, DATABASE_URL: database.url };
    });
    afterAll(async () => {
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    /** Runs `use` on the CLI's database, opened and closed around it as another process would. */
    async function inStore<T>(use: (store: Store) => Promise<T>): Promise<T> {
      const store = await openStore(database.url);
      try {
        return await use(store);
      } finally {
        await store.close();
      }
    }

    const run = async (...args: string[]) => cli(args, env);

    test("organizations and environments: created, listed, handles checked and unique", async () => {
      expect(await run("org", "create", "acme")).toMatchObject({ code: 0, stdout: "organization acme created\n" });
      const again = await run("org", "create", "acme");
      expect(again).toMatchObject({ code: 1, stderr: 'error: the organization handle "acme" is taken\n' });
      const bad = await run("org", "create", "Acme_Corp");
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain('"Acme_Corp" is not a handle');

      expect((await run("env", "create", "acme-prod", "--org", "acme")).code).toBe(0);
      expect((await run("env", "create", "acme-dev", "--org", "acme")).code).toBe(0);
      const unknown = await run("env", "create", "acme-qa", "--org", "nope");
      expect(unknown).toMatchObject({ code: 1 });
      expect(unknown.stderr).toContain('no organization "nope"');
      expect((await run("env", "create", "acme-prod", "--org", "acme")).stderr).toContain("is taken");
      expect((await run("env", "create", "acme-qa")).stderr).toContain("missing --org <org>");

      const list = await run("env", "list", "--org", "acme");
      expect(list.stdout).toMatch(/^acme-dev\s+acme\s+-\s+\d{4}-/m);
      expect(list.stdout).toMatch(/^acme-prod\s+acme\s+-\s+\d{4}-/m);
      expect((await run("org", "list")).stdout).toMatch(/^acme\s+2\s+\d{4}-/m);
      const stored = await inStore((store) => store.control.environments.byHandle("acme-prod"));
      expect(stored?.organization).toBe((await inStore((store) => store.control.organizations.byHandle("acme")))?.id);
    });

    test("key create --env/--org prints a key once, stored hashed; listed and revoked", async () => {
      const made = await run("key", "create", "--env", "acme-prod");
      expect(made.code).toBe(0);
      const envKey = made.stdout.trim();
      expect(envKey).toMatch(/^act_e_[A-Za-z0-9_-]{43}$/);
      expect(made.stderr).toContain("administrator of environment acme-prod");
      const orgKey = (await run("key", "create", "--org", "acme")).stdout.trim();
      expect(orgKey).toMatch(/^act_o_[A-Za-z0-9_-]{43}$/);
      expect((await run("key", "create", "--org", "acme", "--env", "acme-prod")).stderr).toContain("not both");

      const [prod, acme] = await inStore(async (store) => [
        await store.control.environments.byHandle("acme-prod"),
        await store.control.organizations.byHandle("acme"),
      ]);
      await inStore(async (store) => {
        expect(await store.control.keys.verify(hashSecret(envKey), Date.now())).toMatchObject({
          environment: prod?.id,
          organization: null,
        });
        expect(await store.control.keys.verify(hashSecret(orgKey), Date.now())).toMatchObject({
          organization: acme?.id,
          environment: null,
        });
      });
      // The key itself is in no column: only its hash and displayed prefix.
      const listed = await run("key", "list");
      expect(listed.stdout).toContain(envKey.slice(0, 14));
      expect(listed.stdout).not.toContain(envKey);
      expect(listed.stdout).toMatch(
        new RegExp(`${orgKey.slice(0, 14)}\\s+org acme\\s+\\d{4}-\\S+\\s+\\d{4}-\\S+\\s+-`),
      );
      expect((await run("key", "list", "--env", "acme-prod")).stdout).not.toContain(orgKey.slice(0, 14));

      const revoked = await run("key", "revoke", envKey.slice(0, 14));
      expect(revoked).toMatchObject({ code: 0 });
      expect(revoked.stdout).toStartWith(`revoked ${envKey.slice(0, 14)}`);
      expect(await inStore((store) => store.control.keys.verify(hashSecret(envKey), Date.now()))).toBeNull();
      expect((await run("key", "revoke", envKey.slice(0, 14))).code).toBe(1);
      // Without --org/--env: the operator key, stored nowhere, as before.
      expect((await run("key", "create")).stdout.trim()).toMatch(/^act_s_[A-Za-z0-9_-]{43}$/);
    });

    test("env grant / grants / revoke: per environment or organization-wide", async () => {
      expect(await run("env", "grant", "acme-prod", "alice")).toMatchObject({
        code: 0,
        stdout: "alice may now use environment acme-prod\n",
      });
      expect((await run("env", "grant", "--org", "acme", "bob")).stdout).toBe(
        "bob may now use every environment of acme\n",
      );
      expect((await run("env", "grant", "acme-prod")).stderr).toContain("give the environment and the user");
      const [prod, dev] = await inStore(async (store) => [
        (await store.control.environments.byHandle("acme-prod"))?.id ?? 0,
        (await store.control.environments.byHandle("acme-dev"))?.id ?? 0,
      ]);
      await inStore(async (store) => {
        expect(await store.control.grants.mayUse("alice", prod)).toBe(true);
        expect(await store.control.grants.mayUse("alice", dev)).toBe(false);
        expect(await store.control.grants.mayUse("bob", dev)).toBe(true);
      });
      const grants = await run("env", "grants", "--org", "acme");
      expect(grants.stdout).toMatch(/^bob\s+acme\s+\*\s+\d{4}-/m);
      expect(grants.stdout).toMatch(/^alice\s+acme\s+acme-prod\s+\d{4}-/m);

      expect((await run("env", "revoke", "acme-prod", "alice")).code).toBe(0);
      expect(await run("env", "revoke", "acme-prod", "alice")).toMatchObject({
        code: 1,
        stdout: "alice had no grant of environment acme-prod\n",
      });
      expect(await inStore((store) => store.control.grants.mayUse("alice", prod))).toBe(false);
    });

    test("env delete says what it would remove and exits 1; with --yes removes that environment only", async () => {
      const [prod, dev] = await inStore(async (store) => {
        const ids = [
          (await store.control.environments.byHandle("acme-prod"))?.id ?? 0,
          (await store.control.environments.byHandle("acme-dev"))?.id ?? 0,
        ];
        for (const id of ids) {
          await store.environment(id).releases.insert({
            version: "v1",
            bundleHash: "b".repeat(64),
            manifest: {},
            bundle: "export {}",
            createdAt: 0,
            publishedBy: null,
          });
          // The same path in both, with bytes in each one's keys of the disk storage the CLI is configured with.
          const stored = await storageFor(new DiskStorage(join(dataDir, "files")), id).put(
            "notes/a.txt",
            new Blob([`bytes of ${id}`]).stream(),
            { maxBytes: 1024, contentType: "text/plain" },
          );
          await store.environment(id).files.put({
            path: "notes/a.txt",
            contentType: "text/plain",
            size: stored.size,
            sha256: stored.sha256,
            ownerKind: "user",
            ownerId: "alice",
            createdAt: 0,
            updatedAt: 0,
          });
        }
        return ids;
      });
      const asked = await run("env", "delete", "acme-dev");
      expect(asked.code).toBe(1);
      expect(asked.stdout).toMatch(/^\s+1\s+releases$/m);
      expect(asked.stderr).toContain("bun run env delete acme-dev --yes");
      expect(await inStore((store) => store.control.environments.byId(dev ?? 0))).not.toBeNull();

      const deleted = await run("env", "delete", "acme-dev", "--yes");
      expect(deleted.code).toBe(0);
      expect(deleted.stdout).toMatch(/^\s+1\s+releases$/m);
      expect(deleted.stdout).toMatch(/^\s+1\s+files$/m);
      const bytesOf = async (id: number) => {
        const found = await storageFor(new DiskStorage(join(dataDir, "files")), id).get("notes/a.txt");
        return found ? new Response(found.body).text() : null;
      };
      expect(await bytesOf(dev ?? 0)).toBeNull();
      expect(await bytesOf(prod ?? 0)).toBe(`bytes of ${prod}`);
      await inStore(async (store) => {
        expect(await store.control.environments.byHandle("acme-dev")).toBeNull();
        expect(await store.environment(dev ?? 0).releases.get("v1")).toBeNull();
        expect(await store.environment(prod ?? 0).releases.get("v1")).not.toBeNull();
      });
      expect((await run("env", "list")).stdout).not.toContain("acme-dev");
      expect((await run("env", "delete", "acme-dev", "--yes")).stderr).toContain('no environment "acme-dev"');

      // Environment 1 (single mode's database, named HANDLE by hosting mode) is never deleted: no instance would start.
      await inStore((store) => store.control.environments.nameSingle("main"));
      const first = await run("env", "delete", "main", "--yes");
      expect(first.code).not.toBe(0);
      expect(first.stderr).toContain("it is not deleted");
      expect(await inStore((store) => store.control.environments.byId(1))).not.toBeNull();
    });
  });
}
