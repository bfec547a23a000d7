import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cli, repoRoot, runCommand } from "../support/cli.ts";
import { dialects } from "../support/databases.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

// The S3 driver and the MCP SDK load on first use (test/start-imports.test.ts); these check that
// start-up and the first request behave as when they were loaded at start.

/** A loopback port nothing listens on. */
function closedPort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const { port } = listener;
  listener.stop(true);
  return port;
}

/** A start-up that fails on what a setting points at: the setting, and what the one line must say of the cause. */
interface Failure {
  cause: string;
  setting: string;
  env: (dataDir: string) => Record<string, string>;
  says: RegExp;
}

const FAILURES: Failure[] = [
  {
    cause: "PostgreSQL cannot be reached",
    setting: "DATABASE_URL",
    env: () => ({ DATABASE_URL: `postgres://actuate:secret@127.0.0.1:${closedPort()}/actuate` }),
    says: /^cannot connect to the database postgres:\/\/\*\*\*@127\.0\.0\.1:\d+\/actuate \(.*ECONNREFUSED.*\)/,
  },
  {
    cause: "DATA_DIR cannot be written",
    setting: "DATA_DIR",
    // A folder under a regular file: refused to root too, where permissions would not be.
    env: (dataDir) => {
      writeFileSync(join(dataDir, "a-file"), "");
      return { DATA_DIR: join(dataDir, "a-file", "data") };
    },
    says: /^DATA_DIR \S+\/a-file\/data cannot be written by this process \(uid \d+\): .*ENOTDIR/,
  },
  {
    cause: "the SQLite file DATABASE_URL names cannot be written",
    setting: "DATABASE_URL",
    env: (dataDir) => {
      writeFileSync(join(dataDir, "a-file"), "");
      return { DATA_DIR: join(dataDir, "data"), DATABASE_URL: `sqlite:${join(dataDir, "a-file", "actuate.db")}` };
    },
    says: /^the SQLite database \S+\/a-file\/actuate\.db cannot be written \(.*EEXIST/,
  },
  {
    cause: "S3 cannot be reached",
    setting: "S3_ENDPOINT",
    env: () => ({
      STORAGE: "s3",
      S3_ENDPOINT: `http://127.0.0.1:${closedPort()}`,
      S3_BUCKET: "actuate-unreachable",
      S3_ACCESS_KEY: "key",
      S3_SECRET_KEY: "secret",
    }),
    says: /^the S3 endpoint http:\/\/127\.0\.0\.1:\d+ cannot be reached \(.*ECONNREFUSED.*\)/,
  },
];
const postgresUrl = process.env.TEST_DATABASE_URL;
if (postgresUrl) {
  FAILURES.push({
    cause: "the PostgreSQL database does not exist",
    setting: "DATABASE_URL",
    env: () => ({ DATABASE_URL: Object.assign(new URL(postgresUrl), { pathname: "/actuate_not_there" }).href }),
    says: /^cannot connect to the database postgres:\/\/\S+\/actuate_not_there \(database "actuate_not_there" does not exist\)/,
  });
}

describe("a start-up failure that is not a configuration error", () => {
  for (const failure of FAILURES) {
    for (const format of ["pretty", "json"] as const) {
      test(`${failure.cause}: one line naming the cause and ${failure.setting}, no stack (LOG_FORMAT=${format})`, async () => {
        const dataDir = mkdtempSync(join(tmpdir(), "actuate-start-"));
        try {
          const env = { DATA_DIR: dataDir, DATABASE_URL: "", PORT: "0", LOG_FORMAT: format, ...failure.env(dataDir) };
          const started = await cli(["start"], env);
          expect(started.code).toBe(1);
          expect(started.stdout).not.toContain("actuate serving");
          const lines = started.stderr.trimEnd().split("\n");
          expect(lines).toHaveLength(1);
          if (format === "json") {
            const line = JSON.parse(lines[0] as string);
            expect(line).toMatchObject({ level: "error", setting: failure.setting });
            expect(line.msg).toMatch(failure.says);
            expect(line.msg).toEndWith(failure.setting);
          } else {
            const message = (lines[0] as string).replace(/^error: /, "");
            expect(lines[0]).toStartWith("error: ");
            expect(message).toMatch(failure.says);
            expect(message).toEndWith(failure.setting);
          }
        } finally {
          rmSync(dataDir, { recursive: true, force: true });
        }
      }, 30_000);
    }
  }

  test("a command other than start, on a database it cannot reach, says so in one line too", async () => {
    const url = `postgres://actuate:secret@127.0.0.1:${closedPort()}/actuate`;
    const listed = await cli(["token", "list"], { DATABASE_URL: url });
    expect(listed.code).toBe(1);
    expect(listed.stderr).toMatch(
      /^error: cannot connect to the database postgres:\/\/\*\*\*@\S+ \(.+\): check DATABASE_URL\n$/,
    );
  }, 30_000);
});

describe("the allocator setting", () => {
  // MIMALLOC_PURGE_HOLES=0 is read by the runtime's allocator as the process starts (docs/DEPLOY.md), so
  // it can only come from whoever launches the server. MIMALLOC_VERBOSE makes each bun print its options:
  // `bun run`, given the default (1) here, prints its own, then the server's bun prints what the script gave it.
  for (const script of ["start", "dev"]) {
    test(`\`bun run ${script}\` launches the server's runtime with hole purging off`, async () => {
      const env = { MIMALLOC_VERBOSE: "1", MIMALLOC_PURGE_HOLES: "1" };
      const launched = await runCommand(["bun", "run", script, "--help"], repoRoot, env);
      expect(launched.code).toBe(0);
      expect(launched.stdout).toContain(`usage: bun run ${script}`);
      expect(launched.stderr.match(/option 'purge_holes': \d/g)).toEqual([
        "option 'purge_holes': 1",
        "option 'purge_holes': 0",
      ]);
    }, 30_000);
  }

  test("the image sets it for the binary", async () => {
    const dockerfile = await Bun.file(join(repoRoot, "deploy", "Dockerfile")).text();
    expect(dockerfile).toMatch(/^ENV MIMALLOC_PURGE_HOLES=0$/m);
  });
});

describe("a port in use", () => {
  test("stops `start` with one line saying so, instead of sharing the port with the server already there", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-port-"));
    // The other server allows sharing (SO_REUSEPORT), as Elysia sets by default: ours must not take it up.
    const other = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      reusePort: true,
      fetch: () => new Response("the other server"),
    });
    try {
      const started = await cli(["start"], { DATA_DIR: dataDir, PORT: String(other.port), HOST: "127.0.0.1" });
      expect(started.code).toBe(1);
      expect(started.stderr.trim()).toBe(
        `error: 127.0.0.1:${other.port} is in use: another server listens there (another actuate?); stop it or set PORT`,
      );
      expect(await (await fetch(`http://127.0.0.1:${other.port}/`)).text()).toBe("the other server");
      const json = await cli(["start"], { DATA_DIR: dataDir, PORT: String(other.port), LOG_FORMAT: "json" });
      expect(json.code).toBe(1);
      expect(JSON.parse(json.stderr)).toMatchObject({
        level: "error",
        msg: expect.stringContaining("is in use"),
        setting: "PORT",
      });
    } finally {
      other.stop(true);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);
});

const [sqlite] = dialects;

describe("the first /mcp requests", () => {
  let t: TestServer;
  beforeAll(async () => {
    if (!sqlite) throw new Error("no dialect");
    t = await startTestServer(sqlite, { release: fixture("basic") });
  });
  afterAll(() => t.stop());

  test("sent together to a server that has answered none yet, are all answered", async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, id) =>
        t.fetch("/mcp", {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25",
          },
          body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/list" }),
        }),
      ),
    );
    for (const [id, res] of answers.entries()) {
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body.id).toBe(id);
      expect((body.result.tools as { name: string }[]).map((tool) => tool.name)).toContain("test.echo");
    }
  });
});
