import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { checkPassword } from "../../src/auth/users.ts";
import { commands } from "../../src/cli/commands.ts";
import { ENV_NAMES } from "../../src/config.ts";
import { openStore } from "../../src/store/open.ts";
import { cli, repoRoot, serve } from "../support/cli.ts";
import { dialects, executeStatements, type TestDatabase } from "../support/databases.ts";
import { freePort } from "../support/hosting.ts";
import { eventually, fixture, type TestResponse } from "../support/server.ts";

// Every test here starts processes; on a loaded machine a cold `bun` start alone can take seconds.
setDefaultTimeout(60_000);

const invoke = (url: string, token: string, action: string, input: unknown): Promise<TestResponse> =>
  fetch(`${url}/actions/${action}/invoke`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: JSON.stringify({ requestId: crypto.randomUUID(), input }),
  });

for (const dialect of dialects) {
  describe(`CLI (${dialect.name})`, () => {
    let database: TestDatabase;
    let dataDir: string;
    let env: Record<string, string>;
    const serviceKey = `cli-key-${crypto.randomUUID()}`;
    beforeAll(async () => {
      database = await dialect.create();
      dataDir = mkdtempSync(join(tmpdir(), "actuate-cli-"));
      env = { DATA_DIR: dataDir, DATABASE_URL: database.url, SERVICE_KEYS: serviceKey, RELEASE_POLL_MS: "100" };
    });
    afterAll(async () => {
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    test("release publish / list / activate, seen by a running server within about a second", async () => {
      const published = await cli(["release", "publish", fixture("basic")], env);
      expect(published.code).toBe(0);
      expect(published.stdout).toContain("release t1 published");
      expect(published.stdout).toMatch(/added\s+test\.echo\s+[0-9a-f]{16}/);
      // New contracts: clients typed from the old ones are told to regenerate.
      expect(published.stdout).toContain("bun run release types");

      const server = await serve(["start", "--release", fixture("basic")], env);
      try {
        expect(server.output()).toContain("release t1");
        // start serves the console as a production bundle (hashed chunks), with no dev server or file watcher.
        const page = await (await fetch(`${server.url}/console`)).text();
        expect(page).toMatch(/src="\/chunk-[a-z0-9]+\.js"/);
        expect(page).not.toContain("/_bun/");
        const v1 = await (await invoke(server.url, serviceKey, "test.version", {})).json();
        expect(v1.execution.output).toEqual({ release: "t1" });

        let mark = server.output().length;
        const second = await cli(["release", "publish", fixture("basic-v2"), "--by", "ci: deploy #42"], env);
        expect(second.code).toBe(0);
        expect(second.stdout).toMatch(/removed\s+test\.echo/);
        expect(second.stdout).toMatch(/unchanged\s+test\.version/);
        await server.waitFor(/release t2 is live/, 3_000, mark);
        expect((await (await invoke(server.url, serviceKey, "test.version", {})).json()).execution.output).toEqual({
          release: "t2",
        });

        const list = await cli(["release", "list"], env);
        expect(list.stdout).toMatch(/^ {2}t1 /m);
        expect(list.stdout).toMatch(/^\* t2 /m);
        // Who published each: --by when given, else the OS user@host; the history says so too.
        expect(list.stdout).toContain(`by ${userInfo().username}@${hostname()}`);
        expect(list.stdout).toMatch(/^\* t2 .* by ci: deploy #42$/m);
        const history = (await (
          await fetch(`${server.url}/releases`, { headers: { authorization: `Bearer ${serviceKey}` } })
        ).json()) as { items: { version: string; publishedBy: string }[] };
        expect(history.items.map((r) => [r.version, r.publishedBy])).toEqual([
          ["t2", "ci: deploy #42"],
          ["t1", `${userInfo().username}@${hostname()}`],
        ]);

        mark = server.output().length;
        expect((await cli(["release", "activate", "t1"], env)).code).toBe(0);
        await server.waitFor(/release t1 is live/, 3_000, mark);
        expect((await (await invoke(server.url, serviceKey, "test.version", {})).json()).execution.output).toEqual({
          release: "t1",
        });

        const refused = await cli(["release", "publish", fixture("basic-v2"), "--version", "t1"], env);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain("already published with different content");
        const unknown = await cli(["release", "activate", "t9"], env);
        expect(unknown.code).toBe(1);
        expect(unknown.stderr).toContain("no release t9");
      } finally {
        await server.kill();
      }
    }, 60_000);

    test("token create prints the token alone on the last line; revoke stops it; only its hash is stored", async () => {
      const created = await cli(["token", "create", "--user", "erin"], env);
      expect(created.code).toBe(0);
      const token = created.stdout.trim().split("\n").at(-1) ?? "";
      expect(token).toMatch(/^act_u_[A-Za-z0-9_-]{43}$/);

      const server = await serve(["start", "--release", fixture("basic")], env);
      try {
        const who = await (await invoke(server.url, token, "test.version", {})).json();
        expect(who.execution.principal).toEqual({ kind: "user", id: "erin" });
        const revoked = await cli(["token", "revoke", token.slice(0, 14)], env);
        expect(revoked.code).toBe(0);
        // Refused within TOKEN_RECHECK_MS (1 s): the server may take the token it vouched for a moment ago until then.
        await eventually(async () => (await invoke(server.url, token, "test.version", {})).status === 401);
      } finally {
        await server.kill();
      }
      expect((await cli(["token", "create"], env)).code).toBe(1);
      expect((await cli(["token", "revoke", "act_u_"], env)).stderr).toContain("at least the first 14 characters");
    }, 60_000);

    test("user add / list / disable / enable: a password shown once, stored as argon2id; disabling revokes the user's tokens, enabling does not bring them back", async () => {
      const added = await cli(["user", "add", "frank"], env);
      expect(added.code).toBe(0);
      expect(added.stderr).toContain("shown once");
      const password = added.stdout.trim();
      expect(password).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect((await cli(["user", "add", "frank"], env)).stderr).toContain("user frank exists already");

      const fromStdin = async (id: string, secret: string) => {
        const proc = Bun.spawn(["bun", "src/cli/main.ts", "user", "add", id, "--password-stdin"], {
          cwd: repoRoot,
          env: { ...process.env, ...env },
          stdin: new TextEncoder().encode(`${secret}\n`),
          stdout: "pipe",
          stderr: "pipe",
        });
        return { code: await proc.exited, stderr: await new Response(proc.stderr).text() };
      };
      expect((await fromStdin("gina", "correct horse battery")).code).toBe(0);
      const short = await fromStdin("hank", "too short");
      expect(short.code).toBe(1);
      expect(short.stderr).toContain("at least 12 characters");

      const listed = await cli(["user", "list"], env);
      expect(listed.stdout).toMatch(/^USER\s+CREATED\s+DISABLED\n/);
      expect(listed.stdout).toMatch(/\nfrank\s+\S+Z\s+-\n/);
      expect(listed.stdout).not.toContain("argon2");
      expect(listed.stdout).not.toContain("hank");

      const store = await openStore(database.url);
      try {
        expect((await store.users.get("frank"))?.passwordHash).toStartWith("$argon2id$");
        expect(await checkPassword(store, "frank", password)).toBe("accepted");
        expect(await checkPassword(store, "frank", `${password}x`)).toBe("refused");
        expect(await checkPassword(store, "gina", "correct horse battery")).toBe("accepted");
        expect(await checkPassword(store, "nobody", password)).toBe("refused");

        const token = (await cli(["token", "create", "--user", "frank"], env)).stdout.trim().split("\n").at(-1) ?? "";
        const server = await serve(["start", "--release", fixture("basic")], env);
        try {
          expect((await invoke(server.url, token, "test.version", {})).status).toBe(200);
          const disabled = await cli(["user", "disable", "frank"], env);
          expect(disabled.stdout).toContain("disabled user frank; 1 token(s) revoked");
          // Refused within TOKEN_RECHECK_MS (1 s), as any revocation.
          await eventually(async () => (await invoke(server.url, token, "test.version", {})).status === 401);
        } finally {
          await server.kill();
        }
        expect(await checkPassword(store, "frank", password)).toBe("disabled");
        expect(await checkPassword(store, "frank", `${password}x`)).toBe("refused");
        expect((await cli(["user", "list"], env)).stdout).toMatch(/\nfrank\s+\S+Z\s+\S+Z\n/);
        const enabled = await cli(["user", "enable", "frank"], env);
        expect(enabled.stdout).toContain("enabled user frank");
        expect(await checkPassword(store, "frank", password)).toBe("accepted");
        expect((await cli(["user", "list"], env)).stdout).toMatch(/\nfrank\s+\S+Z\s+-\n/);
        // The token disabling revoked stays revoked.
        expect((await cli(["token", "list"], env)).stdout).toMatch(/\s+frank\s+\S+Z\s+\S+Z\n/);
        expect((await cli(["user", "disable", "nobody"], env)).stderr).toContain("no user nobody");
      } finally {
        await store.close();
      }
    }, 60_000);

    test("token list shows each token's prefix, user, creation and revocation, never the token", async () => {
      const made = async (user: string) =>
        (await cli(["token", "create", "--user", user], env)).stdout.trim().split("\n").at(-1) ?? "";
      const kept = await made("list-kept");
      const gone = await made("list-gone");
      expect((await cli(["token", "revoke", gone], env)).code).toBe(0);
      const listed = await cli(["token", "list"], env);
      expect(listed.code).toBe(0);
      const [header, ...rows] = listed.stdout.trim().split("\n");
      expect(header).toMatch(/^PREFIX\s+USER\s+CREATED\s+REVOKED$/);
      const iso = "\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z";
      expect(rows).toContainEqual(
        expect.stringMatching(new RegExp(`^${kept.slice(0, 14)}\\s+list-kept\\s+${iso}\\s+-$`)),
      );
      expect(rows).toContainEqual(
        expect.stringMatching(new RegExp(`^${gone.slice(0, 14)}\\s+list-gone\\s+${iso}\\s+${iso}$`)),
      );
      expect(listed.stdout).not.toContain(kept);
    });

    test("start without --release serves the active release and publishes nothing; --release says who follows", async () => {
      const isolated = { ...env, DATA_DIR: mkdtempSync(join(tmpdir(), "actuate-start-")) };
      const fresh = await dialect.create();
      const onFresh = { ...isolated, DATABASE_URL: fresh.url };
      try {
        // What start says may follow its "serving" line: wait for it before stopping the process.
        const empty = await serve(["start"], onFresh);
        await empty.waitFor(/no release is active: publish one with bun run release publish <dir>/, 15_000, 0);
        await empty.kill();
        expect(empty.output()).toContain("release none");

        const published = await serve(["start", "--release", fixture("basic")], onFresh);
        await published.waitFor(/every server on \S+ switches to it within its RELEASE_POLL_MS/, 15_000, 0);
        await published.kill();
        expect(published.output()).toContain("release t1 published");

        expect((await cli(["release", "publish", fixture("basic-v2")], onFresh)).code).toBe(0);
        // The repository has releases/v1; start must not publish it over t2.
        const server = await serve(["start"], onFresh);
        try {
          expect(server.output()).toContain("release t2");
          expect((await (await invoke(server.url, serviceKey, "test.version", {})).json()).execution.output).toEqual({
            release: "t2",
          });
        } finally {
          await server.kill();
        }
        const list = await cli(["release", "list"], onFresh);
        expect(list.stdout).toMatch(/^\* t2 /m);
        expect(list.stdout).not.toContain("v1");
      } finally {
        await fresh.drop();
        rmSync(isolated.DATA_DIR, { recursive: true, force: true });
      }
    });

    test("a bad configuration value stops start-up with a message naming it", async () => {
      const bad = await cli(["start"], { ...env, PORT: "eighty", WAIT_MS: "-5" });
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain('PORT="eighty"');
      expect(bad.stderr).toContain('WAIT_MS="-5"');
    });
  });
}

describe("bun run dev", () => {
  test("creates and prints a dev key with a working curl, and republishes on every change", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-dev-"));
    // The example release of the README, as a developer would start from it.
    const source = mkdtempSync(join(tmpdir(), "actuate-dev-src-"));
    cpSync(join(repoRoot, "releases", "v1"), source, { recursive: true });
    const server = await serve(["dev", "--release", source], { DATA_DIR: dataDir, DATABASE_URL: "", SERVICE_KEYS: "" });
    try {
      await eventually(() => server.output().includes("watching"));
      const key = (await Bun.file(join(dataDir, "dev-service-key")).text()).trim();
      expect(server.output()).toContain(key);
      const curl =
        /curl -s (\S+) \\\n\s+-H "Authorization: Bearer (\S+)" -H "Content-Type: application\/json" \\\n\s+-d '(.+)'/.exec(
          server.output(),
        );
      expect(curl).not.toBeNull();
      const [, url = "", bearer = "", body = ""] = curl ?? [];
      const pasted: TestResponse = await fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${bearer}` },
        body,
      });
      expect(pasted.status).toBe(200);
      expect((await pasted.json()).execution.status).toBe("succeeded");
      // The console comes from Bun's development server here (rebuilt on change), and only here.
      expect(await (await fetch(`${server.url}/console`)).text()).toContain('src="/_bun/client/');

      const file = join(source, "actions/math/add.ts");
      const mark = server.output().length;
      writeFileSync(file, (await Bun.file(file).text()).replace("sum: a + b", "sum: a + b + 1000"));
      await server.waitFor(/release v1\+[0-9a-f]{8} is live/, 15_000, mark);
      const edited = await (await invoke(server.url, key, "math.add", { a: 1, b: 2 })).json();
      expect(edited.execution.output).toEqual({ sum: 1003 });
    } finally {
      await server.kill();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(source, { recursive: true, force: true });
    }
  }, 60_000);
  test("in hosting mode, the printed curl names environment 1's own host (the bound address names none)", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-dev-"));
    const port = freePort();
    const server = await serve(["dev", "--release", join(repoRoot, "releases", "v1")], {
      DATA_DIR: dataDir,
      DATABASE_URL: "",
      SERVICE_KEYS: "",
      PORT: String(port),
      SERVICE_URL: `http://actuate.localhost:${port}`,
      HANDLE: "local",
    });
    try {
      await eventually(() => server.output().includes("watching"));
      const curl =
        /curl -s (\S+) \\\n\s+-H "Authorization: Bearer (\S+)" -H "Content-Type: application\/json" \\\n\s+-d '(.+)'/.exec(
          server.output(),
        );
      const [, url = "", bearer = "", body = ""] = curl ?? [];
      expect(url).toStartWith(`http://local.actuate.localhost:${port}/actions/`);
      const pasted: TestResponse = await fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${bearer}` },
        body,
      });
      expect(pasted.status).toBe(200);
      expect((await pasted.json()).execution.status).toBe("succeeded");
    } finally {
      await server.kill();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

/** A trigger that makes every insert into `releases` fail, as a database refusing the statement would. */
const REFUSE_RELEASES = {
  sqlite:
    "create trigger refuse_releases before insert on releases begin select raise(abort, 'refused by the test'); end",
  postgres: `create function refuse_releases() returns trigger language plpgsql as $$
      begin raise exception 'refused by the test'; end $$;
    create trigger refuse_releases before insert on releases for each row execute function refuse_releases()`,
};

for (const dialect of dialects) {
  describe(`bun run dev (${dialect.name})`, () => {
    test("a republish that fails says why: a release's own mistake as it is, a failed statement without its parameters", async () => {
      const database = await dialect.create();
      const dataDir = mkdtempSync(join(tmpdir(), "actuate-dev-failed-"));
      const source = mkdtempSync(join(tmpdir(), "actuate-dev-failed-src-"));
      cpSync(join(repoRoot, "releases", "v1"), source, { recursive: true });
      const server = await serve(["dev", "--release", source], {
        DATA_DIR: dataDir,
        DATABASE_URL: database.url,
        SERVICE_KEYS: "",
      });
      try {
        await server.waitFor(/watching/, 15_000, 0);
        const file = join(source, "actions/math/add.ts");
        const original = await Bun.file(file).text();
        let mark = server.output().length;
        writeFileSync(file, `${original}\nexport const broken = ;\n`);
        expect(await server.waitFor(/not republished: .*/, 15_000, mark)).toContain("does not build");

        // drizzle's message for a failed statement on PostgreSQL is the statement and its parameters (the bundle's hash…).
        await executeStatements(database.url, REFUSE_RELEASES[dialect.name]);
        mark = server.output().length;
        writeFileSync(file, original.replace("sum: a + b", "sum: a + b + 1000"));
        expect(await server.waitFor(/not republished: [^\n]*/, 15_000, mark)).toContain("refused by the test");
        expect(server.output().slice(mark)).not.toContain("params:");
      } finally {
        await server.kill();
        await database.drop();
        rmSync(dataDir, { recursive: true, force: true });
        rmSync(source, { recursive: true, force: true });
      }
    }, 60_000);
  });
}

describe("bun run dev and releases activated from elsewhere", () => {
  test("a restored file or a restart does not bring the folder's release back over a newer one; an edit does, and says so", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-dev-other-"));
    const source = mkdtempSync(join(tmpdir(), "actuate-dev-other-src-"));
    cpSync(join(repoRoot, "releases", "v1"), source, { recursive: true });
    const env = { DATA_DIR: dataDir, DATABASE_URL: "", SERVICE_KEYS: "", RELEASE_POLL_MS: "100" };
    let server = await serve(["dev", "--release", source], env);
    try {
      await server.waitFor(/watching/, 15_000, 0);
      let mark = server.output().length;
      expect((await cli(["release", "publish", fixture("basic-v2")], env)).code).toBe(0);
      await server.waitFor(/release t2 is live/, 15_000, mark);

      // What `git checkout` does: the file is written again, its content the same as published.
      const file = join(source, "actions/math/add.ts");
      const original = await Bun.file(file).text();
      mark = server.output().length;
      writeFileSync(file, original);
      await server.waitFor(/serving t2, activated from elsewhere after \S+ last changed/, 15_000, mark);
      const key = (await Bun.file(join(dataDir, "dev-service-key")).text()).trim();
      expect((await (await invoke(server.url, key, "test.version", {})).json()).execution.output).toEqual({
        release: "t2",
      });

      mark = server.output().length;
      writeFileSync(file, original.replace("sum: a + b", "sum: a + b + 1000"));
      await server.waitFor(/changed after t2 was activated from elsewhere; it replaces t2/, 15_000, mark);
      await server.waitFor(/release v1\+[0-9a-f]{8} is live/, 15_000, mark);

      expect((await cli(["release", "activate", "t2"], env)).code).toBe(0);
      await server.kill();
      server = await serve(["dev", "--release", source], env);
      await server.waitFor(/watching/, 15_000, 0);
      expect(server.output()).toContain("(release t2,");
      expect(server.output()).toMatch(/serving t2, activated from elsewhere/);
    } finally {
      await server.kill();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(source, { recursive: true, force: true });
    }
  }, 90_000);
});

describe("CLI usage", () => {
  test("each command's --help lists its flags, the environment it reads with defaults, and examples", async () => {
    const publish = await cli(["release", "publish", "--help"], {});
    expect(publish.code).toBe(0);
    expect(publish.stdout).toStartWith("usage: bun run release publish <dir> [--version <v>] [--by <name>] [--force]");
    expect(publish.stdout).toMatch(/--version <v>\s+publish under this version/);
    expect(publish.stdout).toMatch(/DATA_DIR\s+\.data\s+folder of the SQLite database/);
    expect(publish.stdout).toContain("examples:\n  bun run release publish releases/v2");
    expect(publish.stdout).not.toContain("WAIT_MS");

    const start = await cli(["start", "--help"], {});
    for (const name of ENV_NAMES) expect(start.stdout).toContain(`  ${name} `);
    expect(start.stdout).toMatch(/WAIT_MS\s+110000\s/);
    expect(start.stdout).toMatch(/RELEASE_POLL_MS\s+500\s/);

    const token = await cli(["token", "--help"], {});
    for (const sub of ["create", "list", "revoke"]) expect(token.stdout).toContain(`usage: bun run token ${sub}`);

    const all = await cli([], {});
    expect(all.code).toBe(1);
    for (const name of ["dev", "start", "release publish", "token list", "key create"]) {
      expect(all.stderr).toContain(`bun run ${name} `);
    }
  });

  test("an unknown flag, a missing argument or an unknown command names itself and prints that command's usage", async () => {
    const flag = await cli(["release", "list", "--bogus"], {});
    expect(flag.code).toBe(1);
    expect(flag.stderr).toBe(
      "error: bun run release list has no flag --bogus\nusage: bun run release list [--url <url>]\n",
    );
    const missing = await cli(["release", "activate"], {});
    expect(missing.stderr).toContain("error: missing <version>\nusage: bun run release activate <version>");
    const user = await cli(["token", "create"], {});
    expect(user.stderr).toBe("error: missing --user <id>\nusage: bun run token create --user <id>\n");
    const sub = await cli(["token", "mint"], {});
    expect(sub.code).toBe(1);
    expect(sub.stderr).toContain('bun run token has no command "mint"');
    expect(sub.stderr).toContain("bun run token create");
  });

  test("the first word of every command is a package.json script that runs the CLI with it", async () => {
    // Without its own script, `bun run <word>` runs whatever else bun finds by that name (`bun run env`
    // prints the environment), and every usage line, example and message naming it would mislead.
    const { scripts } = (await Bun.file(join(repoRoot, "package.json")).json()) as { scripts: Record<string, string> };
    const words = [...new Set(commands.map((command) => command.name.split(" ")[0] as string))];
    const missing = words.filter((word) => !scripts[word]?.endsWith(`bun src/cli/main.ts ${word}`));
    expect(missing).toEqual([]);
  });

  test("key create prints a strong service key alone on stdout, and how a server takes it", async () => {
    const made = await cli(["key", "create"], {});
    expect(made.code).toBe(0);
    const key = made.stdout.trim();
    expect(key).toMatch(/^act_s_[A-Za-z0-9_-]{43}$/);
    expect(made.stderr).toContain(`SERVICE_KEYS=${key} bun run start`);
    expect((await cli(["key", "create"], {})).stdout.trim()).not.toBe(key);

    const dataDir = mkdtempSync(join(tmpdir(), "actuate-key-"));
    const server = await serve(["start", "--release", fixture("basic")], {
      DATA_DIR: dataDir,
      DATABASE_URL: "",
      SERVICE_KEYS: key,
    });
    try {
      expect((await invoke(server.url, key, "test.version", {})).status).toBe(200);
    } finally {
      await server.kill();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("errors a developer can act on", () => {
  test("a handler or a workflow step that throws is logged with its stack, naming the release file and line", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-errors-"));
    // Readable lines, as a developer reads them (JSON lines carry the same stack, its newlines escaped).
    const env = { DATA_DIR: dataDir, DATABASE_URL: "", SERVICE_KEYS: "errors-key", LOG_FORMAT: "pretty" };
    let server = await serve(["start", "--release", fixture("basic")], env);
    try {
      const failed = await (await invoke(server.url, "errors-key", "test.fail", { message: "kaput" })).json();
      const { id } = failed.execution;
      expect(failed.execution).toMatchObject({ status: "failed", errorCode: "action_failed", errorMessage: "kaput" });
      // Named relative to the release: the server's paths stay out of a line the caller also reads.
      const frame = String.raw`\n\s+at handler \(actions/test/fail\.ts:8:\d+\)`;
      await server.waitFor(
        new RegExp(String.raw`\[test\.fail ${id}\] the handler threw: Error: kaput${frame}`),
        15_000,
        0,
      );
      await server.kill();

      server = await serve(["start", "--release", fixture("workflows")], env);
      const input = { failures: 1, retries: 1, backoffMs: 0 };
      const { runId } = await (await invoke(server.url, "errors-key", "wf.flaky", input)).json();
      const thrown = String.raw`\[wf\.flaky ${runId}\] step "call" attempt 1 threw: Error: attempt 1 failed\n\s+at .*\(actions/wf/flaky\.ts:13:\d+`;
      await server.waitFor(new RegExp(thrown), 10_000, 0);
    } finally {
      await server.kill();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("shutdown", () => {
  test("executions a killed server left running are failed as execution_interrupted at the next start (SQLite)", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-kill-"));
    const env = { DATA_DIR: dataDir, DATABASE_URL: "", SERVICE_KEYS: "kill-key", WAIT_MS: "100" };
    const first = await serve(["start", "--release", fixture("basic")], env);
    const res = await invoke(first.url, "kill-key", "test.until-aborted", {});
    expect(res.status).toBe(202);
    const { id } = (await res.json()).execution;
    first.proc.kill("SIGKILL");
    await first.proc.exited;

    const second = await serve(["start", "--release", fixture("basic")], env);
    try {
      expect(second.output()).toContain("1 execution(s) left running by a stopped server were marked failed");
      const after = await fetch(`${second.url}/executions/${id}`, { headers: { authorization: "Bearer kill-key" } });
      expect(await after.json()).toMatchObject({ status: "failed", errorCode: "execution_interrupted" });
    } finally {
      await second.kill();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  const postgres = dialects.find((d) => d.name === "postgres");
  test.skipIf(!postgres)(
    "on PostgreSQL, another instance fails what a killed server left running once its heartbeat is overdue",
    async () => {
      const database = (await postgres?.create()) as TestDatabase;
      const dirs = [mkdtempSync(join(tmpdir(), "actuate-kill-a-")), mkdtempSync(join(tmpdir(), "actuate-kill-b-"))];
      const env = (dir: string) => ({
        DATA_DIR: dir,
        DATABASE_URL: database.url,
        SERVICE_KEYS: "kill-key",
        WAIT_MS: "100",
        WORKFLOW_LEASE_MS: "1000",
      });
      const survivor = await serve(["start", "--release", fixture("basic")], env(dirs[0] as string));
      const doomed = await serve(["start", "--release", fixture("basic")], env(dirs[1] as string));
      try {
        const res = await invoke(doomed.url, "kill-key", "test.until-aborted", {});
        expect(res.status).toBe(202);
        const { id } = (await res.json()).execution;
        // Alive, its execution is left alone, however long it runs.
        await Bun.sleep(1_500);
        const read = async () => {
          const res = await fetch(`${survivor.url}/executions/${id}`, {
            headers: { authorization: "Bearer kill-key" },
          });
          return (await res.json()) as { status: string };
        };
        expect((await read()).status).toBe("running");
        doomed.proc.kill("SIGKILL");
        await doomed.proc.exited;
        const after = await eventually(async () => {
          const execution = await read();
          return execution.status === "failed" ? execution : null;
        }, 10_000);
        expect(after).toMatchObject({ status: "failed", errorCode: "execution_interrupted" });
        await survivor.waitFor(/1 execution\(s\) of a stopped server were marked failed/, 5_000, 0);
      } finally {
        await survivor.kill();
        await database.drop();
        for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
      }
    },
    30_000,
  );

  test("SIGTERM aborts running handlers through ctx.signal and records how they ended", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-stop-"));
    const env = { DATA_DIR: dataDir, DATABASE_URL: "", SERVICE_KEYS: "stop-key", WAIT_MS: "100" };
    const server = await serve(["start", "--release", fixture("basic")], env);
    let id = "";
    try {
      const res = await invoke(server.url, "stop-key", "test.until-aborted", {});
      expect(res.status).toBe(202);
      id = (await res.json()).execution.id;
    } finally {
      await server.kill();
    }
    expect(server.proc.exitCode).toBe(0);
    const store = await openStore(`sqlite:${join(dataDir, "actuate.db")}`);
    try {
      expect(await store.executions.get(id)).toMatchObject({
        status: "failed",
        errorCode: "action_failed",
        errorMessage: "the server is shutting down",
      });
    } finally {
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
