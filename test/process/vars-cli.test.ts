import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../src/store/open.ts";
import { type CliResult, cli, repoRoot } from "../support/cli.ts";
import { dialects, selectRows, type TestDatabase } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

// Issue #44: `vars set|list|unset` as processes: the value from standard input only, single mode without a
// handle, hosting mode with one, and over --url (the environment's host, and the apex with a handle).

// Every command is a process; on a loaded machine a cold `bun` start alone can take seconds.
setDefaultTimeout(90_000);

const SECRETS_KEY = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64");
const SECRET = `sk_live_${crypto.randomUUID().replaceAll("-", "")}`;

/** The CLI with `input` on its standard input (a pipe that ends). */
async function withStdin(args: string[], env: Record<string, string>, input: string): Promise<CliResult> {
  const proc = Bun.spawn(["bun", "src/cli/main.ts", ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdin: new Blob([input]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

/** The rows of the variables table, as stored. */
const storedVariables = (url: string) => selectRows(url, "select environment, name, secret, value from variables");

/** Whether the database's files hold `text` anywhere (SQLite: the file and its WAL). */
function sqliteFilesHold(url: string, text: string): boolean {
  const path = url.replace(/^sqlite:/, "");
  return [path, `${path}-wal`].some((file) => {
    try {
      return readFileSync(file).includes(Buffer.from(text));
    } catch {
      return false;
    }
  });
}

for (const dialect of dialects) {
  describe(`vars in single mode, on the database (${dialect.name})`, () => {
    let database: TestDatabase;
    let dataDir: string;
    let env: Record<string, string>;
    beforeAll(async () => {
      database = await dialect.create();
      dataDir = mkdtempSync(join(tmpdir(), "actuate-vars-cli-"));
      env = { DATA_DIR: dataDir, DATABASE_URL: database.url, SECRETS_KEY };
      // The schema, as a server's start makes it.
      await (await openStore(database.url)).close();
    });
    afterAll(async () => {
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    test("set reads standard input (one trailing newline trimmed); list shows it; unset removes it", async () => {
      const set = await withStdin(["vars", "set", "REGION"], env, "eu-west\n");
      expect(set).toMatchObject({ code: 0, stdout: "set variable REGION\n" });
      const replaced = await withStdin(["vars", "set", "REGION"], env, "eu-central\n\n");
      expect(replaced).toMatchObject({ code: 0, stdout: "replaced variable REGION\n" });
      const list = await cli(["vars", "list"], env);
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(/^NAME\s+SECRET\s+VALUE\s+UPDATED\s+BY/m);
      // The second newline was part of the value: only one is trimmed.
      expect((await storedVariables(database.url)).find((r) => r.name === "REGION")?.value).toBe("eu-central\n");
      expect(list.stdout).toMatch(/^REGION\s+no\s+eu-central/m);
      expect(list.stdout).toContain("@");

      const unset = await cli(["vars", "unset", "REGION"], env);
      expect(unset).toMatchObject({ code: 0, stdout: "unset REGION\n" });
      const again = await cli(["vars", "unset", "REGION"], env);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain("REGION");
    });

    test("a secret: stored sealed, listed as ••••, its value in no output", async () => {
      const set = await withStdin(["vars", "set", "STRIPE_KEY", "--secret"], env, `${SECRET}\n`);
      expect(set).toMatchObject({ code: 0, stdout: "set secret STRIPE_KEY\n" });
      expect(set.stderr).not.toContain(SECRET);
      const list = await cli(["vars", "list"], env);
      expect(list.stdout).toMatch(/^STRIPE_KEY\s+yes\s+••••/m);
      expect(list.stdout + list.stderr).not.toContain(SECRET);
      const row = (await storedVariables(database.url)).find((r) => r.name === "STRIPE_KEY");
      expect(row?.value).toEqual(expect.any(String));
      expect(String(row?.value)).not.toContain(SECRET);
      if (dialect.name === "sqlite") expect(sqliteFilesHold(database.url, SECRET)).toBe(false);
    });

    test("a value on the command line is refused, saying to pipe it; nothing is stored", async () => {
      const before = (await storedVariables(database.url)).length;
      const typed = await withStdin(["vars", "set", "TOKEN_A", "typed-value-123"], env, "");
      expect(typed.code).toBe(1);
      expect(typed.stderr).toContain("standard input");
      expect(typed.stderr).toContain("printf %s");
      const three = await withStdin(["vars", "set", "main", "TOKEN_A", "typed-value-123"], env, "");
      expect(three.code).toBe(1);
      expect(three.stderr).toContain("standard input");
      expect(three.stderr).not.toContain("typed-value-123");
      const flag = await withStdin(["vars", "set", "TOKEN_A", "--value", "typed-value-123"], env, "");
      expect(flag.code).toBe(1);
      expect(flag.stderr).toContain("has no flag --value");
      const empty = await withStdin(["vars", "set", "TOKEN_A"], env, "");
      expect(empty.code).toBe(1);
      expect(empty.stderr).toContain("no value on standard input");
      expect((await storedVariables(database.url)).length).toBe(before);
    });

    test("refusals name the problem: a bad name, a short secret", async () => {
      const bad = await withStdin(["vars", "set", "lower_case"], env, "x");
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain("not a variable name");
      const short = await withStdin(["vars", "set", "SHORT_ONE", "--secret"], env, "1234567");
      expect(short.code).toBe(1);
      expect(short.stderr).toContain("at least 8");
      expect(short.stderr).not.toContain("1234567");
    });
  });

  describe(`vars in hosting mode, on the database (${dialect.name})`, () => {
    let database: TestDatabase;
    let dataDir: string;
    let env: Record<string, string>;
    beforeAll(async () => {
      database = await dialect.create();
      dataDir = mkdtempSync(join(tmpdir(), "actuate-vars-cli-"));
      env = {
        DATA_DIR: dataDir,
        DATABASE_URL: database.url,
        SECRETS_KEY,
        SERVICE_URL: "http://actuate.localhost:9",
      };
      const store = await openStore(database.url);
      const org = await store.control.organizations.create("acme", Date.now());
      await store.control.environments.create("acme-prod", org.id, Date.now());
      await store.control.environments.create("acme-dev", org.id, Date.now());
      await store.close();
    });
    afterAll(async () => {
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    test("the environment is named; each keeps its own; leaving it out is refused", async () => {
      expect(await withStdin(["vars", "set", "acme-prod", "REGION"], env, "eu\n")).toMatchObject({
        code: 0,
        stdout: "set variable REGION in acme-prod\n",
      });
      expect((await withStdin(["vars", "set", "acme-dev", "REGION"], env, "us\n")).code).toBe(0);
      expect((await cli(["vars", "list", "acme-prod"], env)).stdout).toMatch(/^REGION\s+no\s+eu\s/m);
      expect((await cli(["vars", "list", "acme-dev"], env)).stdout).toMatch(/^REGION\s+no\s+us\s/m);
      const bare = await cli(["vars", "list"], env);
      expect(bare.code).toBe(1);
      expect(bare.stderr).toContain("name the environment");
      const unknown = await withStdin(["vars", "set", "acme-qa", "REGION"], env, "eu");
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('no environment "acme-qa"');
      expect((await cli(["vars", "unset", "acme-dev", "REGION"], env)).code).toBe(0);
      expect((await cli(["vars", "list", "acme-prod"], env)).stdout).toMatch(/^REGION\s+no\s+eu\s/m);
    });
  });
}

describe("vars over --url", () => {
  const dialect = dialects[0] as (typeof dialects)[number];
  let single: TestServer;
  let hosting: HostingServer;
  beforeAll(async () => {
    single = await startTestServer(dialect, { env: { SECRETS_KEY } });
    hosting = await startHostingServer(dialect, {
      env: { SECRETS_KEY },
      environments: [{ handle: "acme-prod", organization: "acme" }],
    });
  }, 60_000);
  afterAll(async () => {
    await single?.stop();
    await hosting?.stop();
  });

  test("the environment's host: set (a secret), list, unset with ACTUATE_TOKEN", async () => {
    const env = { ACTUATE_TOKEN: single.serviceKey };
    const url = ["--url", single.url];
    const set = await withStdin(["vars", "set", "STRIPE_KEY", "--secret", ...url], env, `${SECRET}\n`);
    expect(set).toMatchObject({ code: 0, stdout: "set secret STRIPE_KEY\n" });
    const seen = await (await single.fetch("/variables/STRIPE_KEY")).json();
    expect(seen).toMatchObject({ secret: true, set: true, updatedBy: expect.stringMatching(/^service:/) });
    const list = await cli(["vars", "list", ...url], env);
    expect(list.stdout).toMatch(/^STRIPE_KEY\s+yes\s+••••/m);
    expect(list.stdout).not.toContain(SECRET);
    expect((await cli(["vars", "unset", "STRIPE_KEY", ...url], env)).code).toBe(0);
    expect((await single.fetch("/variables/STRIPE_KEY")).status).toBe(404);
    const noToken = await withStdin(["vars", "set", "REGION", ...url], {}, "eu");
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toContain("ACTUATE_TOKEN");
  });

  test("the apex with the environment named: an organization's key", async () => {
    const env = { ACTUATE_TOKEN: await hosting.key({ organization: "acme" }) };
    const url = ["--url", hosting.serviceUrl];
    expect((await withStdin(["vars", "set", "acme-prod", "REGION", ...url], env, "eu\n")).code).toBe(0);
    const list = await cli(["vars", "list", "acme-prod", ...url], env);
    expect(list.stdout).toMatch(/^REGION\s+no\s+eu\s/m);
    const other = await cli(["vars", "list", "beta-prod", ...url], env);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain("environment_not_found");
  });
});
