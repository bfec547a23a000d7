import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cli, type ServerProcess, serve } from "../support/cli.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";
import { eventually, fixture } from "../support/server.ts";

// `release publish|list|activate --url`: the real CLI against real server processes, with no database
// access of its own (issue #41 §2, single mode with a service key).

setDefaultTimeout(90_000);

const invoke = (url: string, token: string, action: string) =>
  fetch(`${url}/actions/${action}/invoke`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: JSON.stringify({ requestId: crypto.randomUUID(), input: {} }),
  });

const releaseOf = async (url: string, token: string) =>
  ((await (await invoke(url, token, "test.version")).json()) as { execution: { output: { release: string } } })
    .execution.output.release;

for (const dialect of dialects) {
  describe(`release --url (${dialect.name})`, () => {
    let database: TestDatabase;
    let dataDir: string;
    let serverEnv: Record<string, string>;
    let servers: ServerProcess[] = [];
    const serviceKey = `remote-key-${crypto.randomUUID()}`;
    /** The CLI's environment: a token and a database it cannot reach, so nothing goes around the API. */
    let remoteEnv: Record<string, string>;
    beforeAll(async () => {
      database = await dialect.create();
      dataDir = mkdtempSync(join(tmpdir(), "actuate-remote-"));
      serverEnv = { DATA_DIR: dataDir, DATABASE_URL: database.url, SERVICE_KEYS: serviceKey, RELEASE_POLL_MS: "100" };
      remoteEnv = {
        ACTUATE_TOKEN: serviceKey,
        DATA_DIR: mkdtempSync(join(tmpdir(), "actuate-remote-cli-")),
        DATABASE_URL: "postgres://nobody@127.0.0.1:1/unreachable",
      };
      // Two instances on one database: the upload reaches one, the other follows by its release poll.
      servers = [await serve(["start", "--release", fixture("basic")], serverEnv)];
      servers.push(await serve(["start"], serverEnv));
    });
    afterAll(async () => {
      for (const server of servers) await server.kill();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(remoteEnv.DATA_DIR as string, { recursive: true, force: true });
    });

    test("publish over HTTP: printed as a local publish, served by the instance at once and by the other within its poll", async () => {
      const [a, b] = servers as [ServerProcess, ServerProcess];
      const published = await cli(
        ["release", "publish", fixture("basic-v2"), "--url", `${a.url}/`, "--by", "ci: deploy #7"],
        remoteEnv,
      );
      expect(published.stderr).toBe("");
      expect(published.code).toBe(0);
      expect(published.stdout).toContain("release t2 published (was t1)");
      expect(published.stdout).toMatch(/added\s+test\.added\s+[0-9a-f]{16}/);
      expect(published.stdout).toMatch(/removed\s+test\.echo/);
      expect(published.stdout).toContain("bun run release types");
      expect(published.stdout).toContain(`${a.url} serves it now`);
      expect((await invoke(a.url, serviceKey, "test.added")).status).toBe(200);
      await eventually(async () => (await invoke(b.url, serviceKey, "test.added")).status === 200, 3_000);

      const again = await cli(["release", "publish", fixture("basic-v2"), "--url", b.url], remoteEnv);
      expect(again.code).toBe(0);
      expect(again.stdout).toContain("release t2 already stored; activated (was t2)");
    });

    test("list and activate over HTTP; activating back is served by both instances", async () => {
      const [a, b] = servers as [ServerProcess, ServerProcess];
      const list = await cli(["release", "list", "--url", a.url], remoteEnv);
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(/^ {2}t1 .*[0-9a-f]{12}/m);
      expect(list.stdout).toMatch(/^\* t2 .* by ci: deploy #7$/m);
      expect(list.stdout.indexOf(" t1 ")).toBeLessThan(list.stdout.indexOf(" t2 "));

      const activated = await cli(["release", "activate", "t1", "--url", b.url], remoteEnv);
      expect(activated.code).toBe(0);
      expect(activated.stdout).toContain("release t1 is now active");
      expect(await releaseOf(b.url, serviceKey)).toBe("t1");
      await eventually(async () => (await releaseOf(a.url, serviceKey)) === "t1", 3_000);

      const unknown = await cli(["release", "activate", "t9", "--url", a.url], remoteEnv);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain("404: release_not_found: no release t9 is published");
    });

    test("refusals are the server's, named: a taken version, a user token, no token", async () => {
      const [a] = servers as [ServerProcess];
      const taken = await cli(
        ["release", "publish", fixture("basic-v2"), "--version", "t1", "--url", a.url],
        remoteEnv,
      );
      expect(taken.code).toBe(1);
      expect(taken.stderr).toContain("409: release_conflict: version t1 is already published with different content");

      const token = (await cli(["token", "create", "--user", "alice"], serverEnv)).stdout.trim().split("\n").at(-1);
      const user = await cli(["release", "publish", fixture("basic-v2"), "--url", a.url], {
        ...remoteEnv,
        ACTUATE_TOKEN: token as string,
      });
      expect(user.code).toBe(1);
      expect(user.stderr).toContain("403: access_denied");

      const none = await cli(["release", "list", "--url", a.url], { ...remoteEnv, ACTUATE_TOKEN: "" });
      expect(none.code).toBe(1);
      expect(none.stderr).toContain("ACTUATE_TOKEN");
      expect(await releaseOf(a.url, serviceKey)).toBe("t1");
    });
  });
}
