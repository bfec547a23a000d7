import { afterAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config.ts";
import { bundlesDir } from "../../src/main.ts";
import { publishRelease } from "../../src/release/publish.ts";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import type { VariableRow } from "../../src/store/variables.ts";
import { createSealer, generateKey, type Sealer } from "../../src/variables/sealing.ts";
import { repoRoot, serve } from "../support/cli.ts";
import { dialects, executeStatements, selectRows } from "../support/databases.ts";
import { fixture } from "../support/server.ts";

const scratch = mkdtempSync(join(tmpdir(), "actuate-secrets-cli-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const SECRETS = { one: "sk_live_one_0123456789", two: "sk_live_two_0123456789" };

const sealedRow = async (sealer: Sealer, name: string, value: string): Promise<VariableRow> => ({
  name,
  secret: true,
  value: await sealer.seal(name, value),
  keyId: sealer.keyId,
  updatedAt: 1,
  updatedBy: "test",
});

/** Runs the CLI with `stdin`, stopped after `timeoutMs` (a command that should have exited and did not). */
async function cliWithInput(args: string[], env: Record<string, string>, stdin = "", timeoutMs = 30_000) {
  const proc = Bun.spawn(["bun", "src/cli/main.ts", ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdin: new Response(stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill(), timeoutMs);
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  return { stdout, stderr, code };
}

for (const dialect of dialects) {
  describe(`secrets rotate-key (${dialect.name})`, () => {
    test("re-seals every environment's secrets under the new key; the old key no longer opens them", async () => {
      const database = await dialect.create();
      const dataDir = mkdtempSync(join(scratch, "data-"));
      let store: Store | null = await openStore(database.url);
      try {
        await executeStatements(
          database.url,
          `insert into environments (id, handle, revision, updated_at, created_at, changed) values (2, 'two', 0, 0, 0, 0)`,
        );
        const [oldKey, newKey, thirdKey] = [generateKey(), generateKey(), generateKey()];
        const old = await createSealer(oldKey);
        await store.variables.set(await sealedRow(old, "ONE_KEY", SECRETS.one));
        await store.environment(2).variables.set(await sealedRow(old, "TWO_KEY", SECRETS.two));
        await store.variables.set({
          ...(await sealedRow(old, "PLAIN", "x")),
          secret: false,
          value: "plain",
          keyId: null,
        });
        await store.close();
        store = null;
        const env = { DATABASE_URL: database.url, DATA_DIR: dataDir };

        const rotated = await cliWithInput(["secrets", "rotate-key"], {
          ...env,
          SECRETS_KEY: oldKey,
          SECRETS_KEY_NEW: newKey,
        });
        const next = await createSealer(newKey);
        expect(rotated.stdout).toBe(`2 secrets re-sealed under key ${next.keyId}\n`);
        expect(rotated.stderr).toContain("set SECRETS_KEY to the new key");
        expect(rotated.code).toBe(0);
        for (const shown of [oldKey, newKey, SECRETS.one, SECRETS.two]) {
          expect(rotated.stdout + rotated.stderr).not.toContain(shown);
        }
        const rows = await selectRows(
          database.url,
          "select environment, name, value, key_id from variables where secret order by environment",
        );
        expect(rows.map((row) => [Number(row.environment), row.name, row.key_id])).toEqual([
          [1, "ONE_KEY", next.keyId],
          [2, "TWO_KEY", next.keyId],
        ]);
        expect(await next.open("ONE_KEY", String(rows[0]?.value))).toBe(SECRETS.one);
        expect(await next.open("TWO_KEY", String(rows[1]?.value))).toBe(SECRETS.two);
        await expect(old.open("ONE_KEY", String(rows[0]?.value))).rejects.toThrow();
        // The plain variable is left as it was.
        expect(await selectRows(database.url, "select value, key_id from variables where name = 'PLAIN'")).toEqual([
          { value: "plain", key_id: null },
        ]);

        // Again, the new key on stdin (never on the command line); the old one as SECRETS_KEY.
        const again = await cliWithInput(["secrets", "rotate-key"], { ...env, SECRETS_KEY: newKey }, `${thirdKey}\n`);
        expect(again.code).toBe(0);
        expect(again.stdout).toBe(`2 secrets re-sealed under key ${(await createSealer(thirdKey)).keyId}\n`);

        // A key that opens none of them: refused, naming the secret and the setting, showing no value.
        const wrong = await cliWithInput(["secrets", "rotate-key"], {
          ...env,
          SECRETS_KEY: oldKey,
          SECRETS_KEY_NEW: generateKey(),
        });
        expect(wrong.code).toBe(1);
        expect(wrong.stderr).toContain("secret ONE_KEY of environment 1 does not open");
        expect(wrong.stderr).toContain("SECRETS_KEY");
        expect(wrong.stderr).not.toContain(SECRETS.one);

        // Not a key: refused before anything is read.
        const bad = await cliWithInput(["secrets", "rotate-key"], {
          ...env,
          SECRETS_KEY: thirdKey,
          SECRETS_KEY_NEW: "short",
        });
        expect(bad.code).toBe(1);
        expect(bad.stderr).toContain("must be 32 bytes");
      } finally {
        await store?.close();
        await database.drop();
      }
    }, 60_000);
  });
}

const sqlite = dialects.find((d) => d.name === "sqlite") as (typeof dialects)[number];

describe("start and dev with variables (sqlite)", () => {
  test("start refuses a database holding secrets without SECRETS_KEY, naming it", async () => {
    const database = await sqlite.create();
    const dataDir = mkdtempSync(join(scratch, "data-"));
    const store = await openStore(database.url);
    await store.variables.set(await sealedRow(await createSealer(generateKey()), "STRIPE_KEY", SECRETS.one));
    await store.close();
    try {
      const started = await cliWithInput(["start"], {
        DATABASE_URL: database.url,
        DATA_DIR: dataDir,
        SERVICE_KEYS: `test-key-${crypto.randomUUID()}`,
        SECRETS_KEY: "",
        PORT: "0",
      });
      expect(started.code).toBe(1);
      expect(started.stderr).toContain("this database holds secrets and SECRETS_KEY is not set");
      // No key file is made for start: a key beside the database protects nothing.
      expect(existsSync(join(dataDir, "secrets-key"))).toBe(false);
    } finally {
      await database.drop();
    }
  }, 60_000);

  test("release activate refuses a release whose required variables are unset, naming them and the command", async () => {
    const database = await sqlite.create();
    const dataDir = mkdtempSync(join(scratch, "data-"));
    const store = await openStore(database.url);
    const config = loadConfig({ DATABASE_URL: database.url, DATA_DIR: dataDir });
    const dir = fixture("variables");
    await publishRelease({
      store,
      bundlesDir: bundlesDir(config),
      dir,
      whenTaken: "refuse",
      shouldActivate: () => false,
    });
    await store.close();
    try {
      const env = { DATABASE_URL: database.url, DATA_DIR: dataDir };
      const activated = await cliWithInput(["release", "activate", "vars1"], env);
      expect(activated.code).toBe(1);
      expect(activated.stderr).toBe(
        [
          "error: release vars1 needs variables that are not set: API_URL, STRIPE_KEY. Set them (the value is read from stdin):",
          "  actuate vars set API_URL",
          "  actuate vars set STRIPE_KEY --secret",
          "",
        ].join("\n"),
      );
      const published = await cliWithInput(["release", "publish", dir, "--version", "vars2"], env);
      expect(published.code).toBe(1);
      expect(published.stderr).toContain("release vars2 needs variables that are not set: API_URL, STRIPE_KEY");
    } finally {
      await database.drop();
    }
  }, 60_000);

  test("dev prints the missing variables and keeps serving the last release; its key file is 0600", async () => {
    const database = await sqlite.create();
    const dataDir = mkdtempSync(join(scratch, "data-"));
    const store = await openStore(database.url);
    const config = loadConfig({ DATABASE_URL: database.url, DATA_DIR: dataDir });
    await publishRelease({ store, bundlesDir: bundlesDir(config), dir: fixture("basic"), whenTaken: "refuse" });
    await store.close();
    // The developer's folder, edited after t1 went live: dev publishes it, and it would replace t1.
    const folder = mkdtempSync(join(scratch, "release-"));
    cpSync(fixture("variables"), folder, { recursive: true });
    const dev = await serve(["dev", "--release", folder], {
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      SECRETS_KEY: "",
    });
    try {
      await dev.waitFor(/variables missing: API_URL, STRIPE_KEY/, 5_000, 0);
      expect(dev.output()).toContain("actuate vars set STRIPE_KEY --secret");
      expect(dev.output()).toContain("release t1");
      const key = readFileSync(join(dataDir, "dev-service-key"), "utf8").trim();
      const res = await fetch(`${dev.url}/actions/test.version/invoke`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ requestId: crypto.randomUUID(), input: {} }),
      });
      expect(res.status).toBe(200);
      expect(statSync(join(dataDir, "secrets-key")).mode & 0o777).toBe(0o600);
    } finally {
      await dev.kill();
      await database.drop();
    }
  }, 60_000);
});
