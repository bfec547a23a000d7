import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cli } from "../support/cli.ts";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { fixture } from "../support/server.ts";

// Issue #44 §2: previews from the CLI, each command a process on the database a hosting server serves
// (docs/decisions/previews.md): env fork, env schedules, release promote, env list.

// Every command is a process; on a loaded machine a cold `bun` start alone can take seconds.
setDefaultTimeout(90_000);

/** The data fixture under another version, with one more action. */
function dataRelease(version: string): string {
  const dir = mkdtempSync(join(tmpdir(), "actuate-fork-cli-"));
  cpSync(fixture("data"), dir, { recursive: true });
  const release = join(dir, "release.ts");
  writeFileSync(release, readFileSync(release, "utf8").replace(/version: "d1"/, `version: "${version}"`));
  writeFileSync(
    join(dir, "actions", "data", "hello.ts"),
    `import { defineAction, Type } from "actuate";
export default defineAction({
  description: "Answers the release's word",
  input: Type.Object({}),
  output: Type.Object({ word: Type.String() }),
  handler: async () => ({ word: "${version}" }),
});
`,
  );
  return dir;
}

for (const dialect of dialects) {
  describe(`CLI env fork, env schedules, release promote (${dialect.name})`, () => {
    let t: HostingServer;
    let env: Record<string, string>;

    beforeAll(async () => {
      t = await startHostingServer(dialect, {
        environments: [{ handle: "acme-prod", organization: "acme", release: fixture("data") }],
      });
      env = { DATA_DIR: t.dataDir, DATABASE_URL: t.config.databaseUrl };
    }, 60_000);
    afterAll(() => t?.stop());

    const run = (...args: string[]) => cli(args, env);
    const notesOf = async (handle: string): Promise<string[]> => {
      const res = await t.invoke(handle, "data.query", { query: { notes: {} } });
      expect(res.status).toBe(200);
      const { result } = (await res.json()).execution.output;
      return (result.notes as { title: string }[]).map((n) => n.title).sort();
    };

    test("env fork --data --ttl: the fork is served at once with the source's data, its keys its own", async () => {
      await t.invoke("acme-prod", "data.add-note", { title: "from prod", priority: 1 });
      const forked = await run("env", "fork", "acme-prod", "acme-pr-42", "--data", "--ttl", "7d");
      expect(forked.code).toBe(0);
      expect(forked.stdout).toContain("environment acme-pr-42 forked from acme-prod in acme (d1)");
      expect(forked.stdout).toMatch(/1 releases, 0 variables, 1 entities, 0 links, 0 files/);
      expect(forked.stdout).toMatch(/deleted by the service at \d{4}-/);
      expect(forked.stdout).toContain("env schedules acme-pr-42 --resume");
      expect(forked.stderr).toContain("key create --env acme-pr-42");
      expect(await notesOf("acme-pr-42")).toEqual(["from prod"]);
      const list = await run("env", "list", "--org", "acme");
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(
        /^ENVIRONMENT\s+ORGANIZATION\s+ACTIVE\s+CREATED\s+FORKED FROM\s+EXPIRES\s+SCHEDULES/m,
      );
      expect(list.stdout).toMatch(/^acme-pr-42\s+acme\s+d1\s+\S+\s+acme-prod\s+\d{4}-\S+\s+paused$/m);
      expect(list.stdout).toMatch(/^acme-prod\s+acme\s+d1\s+\S+\s+-\s+-\s+on$/m);
    });

    test("env fork refusals: a bad TTL, a taken handle, an unknown source; without --data no entities", async () => {
      const ttl = await run("env", "fork", "acme-prod", "acme-pr-43", "--ttl", "100d");
      expect(ttl.code).toBe(1);
      expect(ttl.stderr).toContain("at most 90d");
      const taken = await run("env", "fork", "acme-prod", "acme-pr-42");
      expect(taken.code).toBe(1);
      expect(taken.stderr).toContain("is taken");
      const unknown = await run("env", "fork", "nope", "acme-pr-44");
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('no environment "nope"');
      const bare = await run("env", "fork", "acme-prod", "acme-pr-45");
      expect(bare.code).toBe(0);
      expect(bare.stdout).toContain("no data: --data copies it");
      expect(await notesOf("acme-pr-45")).toEqual([]);
    });

    test("env schedules --resume|--pause sets the environment's flag", async () => {
      const paused = async () => (await t.store.control.environments.byHandle("acme-pr-42"))?.schedulesPaused;
      expect(await paused()).toBe(true);
      const resumed = await run("env", "schedules", "acme-pr-42", "--resume");
      expect(resumed).toMatchObject({ code: 0 });
      expect(resumed.stdout).toContain("schedules of acme-pr-42 resumed");
      expect(await paused()).toBe(false);
      expect((await run("env", "schedules", "acme-pr-42", "--pause")).code).toBe(0);
      expect(await paused()).toBe(true);
      const neither = await run("env", "schedules", "acme-pr-42");
      expect(neither.code).toBe(1);
      expect(neither.stderr).toContain("--pause or --resume");
    });

    test("release promote publishes the fork's release to the source with the contract diff, and refuses a conflict", async () => {
      await t.publish("acme-pr-42", dataRelease("d2"));
      const promoted = await run("release", "promote", "acme-pr-42", "acme-prod");
      expect(promoted.code).toBe(0);
      expect(promoted.stdout).toContain("promoting acme-pr-42's release d2 to acme-prod");
      expect(promoted.stdout).toContain("release d2 published (was d1)");
      expect(promoted.stdout).toMatch(/added\s+data\.hello/);
      expect((await t.store.control.environments.byHandle("acme-prod"))?.activeVersion).toBe("d2");
      const again = await run("release", "promote", "acme-pr-42", "acme-prod");
      expect(again.stdout).toContain("release d2 already stored; activated");
      // The same version with other content in the target: refused, the target unchanged.
      await t.publish("acme-prod", dataRelease("d3"));
      await t.publish("acme-pr-45", fixture("data"), "d3");
      const conflict = await run("release", "promote", "acme-pr-45", "acme-prod");
      expect(conflict.code).toBe(1);
      expect(conflict.stderr).toContain("version d3 is already published with different content");
      expect((await t.store.control.environments.byHandle("acme-prod"))?.activeVersion).toBe("d3");
    });
  });
}
