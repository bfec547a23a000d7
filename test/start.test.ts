import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cli, repoRoot, runCommand } from "./support/cli.ts";
import { dialects } from "./support/databases.ts";
import { fixture, startTestServer, type TestServer } from "./support/server.ts";

// The S3 driver and the MCP SDK load on first use (test/start-imports.test.ts); these check that
// start-up and the first request behave as when they were loaded at start.

/** A loopback port nothing listens on. */
function closedPort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const { port } = listener;
  listener.stop(true);
  return port;
}

describe("start-up", () => {
  test("an unreachable S3 endpoint still stops `start` before it serves, with the driver's error", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-start-"));
    try {
      const started = await cli(["start"], {
        DATA_DIR: dataDir,
        PORT: "0",
        STORAGE: "s3",
        S3_ENDPOINT: `http://127.0.0.1:${closedPort()}`,
        S3_BUCKET: "actuate-unreachable",
        S3_ACCESS_KEY: "key",
        S3_SECRET_KEY: "secret",
      });
      expect(started.code).toBe(1);
      expect(started.stderr).toContain("ECONNREFUSED");
      expect(started.stdout).not.toContain("actuate serving");
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
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
