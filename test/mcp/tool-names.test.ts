import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { ReleaseError } from "../../src/release/errors.ts";
import { dialects } from "../support/databases.ts";
import { mcpClient } from "../support/mcp-client.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;

const action = (alias: string) => `import { defineAction, Type } from "actuate";
export default defineAction({
  description: "Says hello",
  input: Type.Object({}),
  output: Type.Object({ hello: Type.String() }),
  mcp: { name: ${JSON.stringify(alias)} },
  handler: () => ({ hello: "world" }),
});`;

/** The basic fixture plus `files` (path → source), in a folder of its own. */
function releaseWith(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "actuate-tool-names-"));
  cpSync(fixture("basic"), dir, { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

const names = async (client: Client) => (await client.listTools()).tools.map((tool) => tool.name);

describe("MCP tool names", () => {
  const dirs: string[] = [];
  const servers: TestServer[] = [];
  const start = async (env: Record<string, string>) => {
    if (!sqlite) throw new Error("no dialect");
    const dir = releaseWith({ "actions/greet/hello.ts": action("say_hello") });
    dirs.push(dir);
    const t = await startTestServer(sqlite, { release: dir, env });
    servers.push(t);
    return t;
  };
  afterAll(async () => {
    for (const t of servers) await t.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test("an action's mcp.name is its tool name; the others keep <domain>.<action>, and HTTP keeps the action's name", async () => {
    const t = await start({});
    const client = await mcpClient(t, t.serviceKey);
    try {
      const listed = await names(client);
      expect(listed).toContain("say_hello");
      expect(listed).toContain("test.echo");
      expect(listed).not.toContain("greet.hello");
      const { tools } = await client.listTools();
      expect(tools.find((tool) => tool.name === "say_hello")).toMatchObject({
        title: "greet.hello",
        _meta: { "dev.service/action": { action: "greet.hello", kind: "function" } },
      });
      for (const name of ["say_hello", "greet.hello"]) {
        const result = await client.callTool({ name, arguments: {} });
        expect(result.structuredContent).toEqual({ hello: "world" });
      }
      // A client that renamed test.echo to test_echo still reaches it.
      const renamed = await client.callTool({ name: "test_echo", arguments: { text: "hi" } });
      expect(renamed.structuredContent).toEqual({ text: "hi" });
      expect((await t.invoke("greet.hello", {})).status).toBe(200);
      expect((await t.invoke("say_hello", {})).status).toBe(404);
    } finally {
      await client.close();
    }
  });

  test("MCP_TOOL_NAMES=underscore lists every action tool without a dot; dotted names still resolve", async () => {
    const t = await start({ MCP_TOOL_NAMES: "underscore" });
    const client = await mcpClient(t, t.serviceKey);
    try {
      const listed = await names(client);
      expect(listed).toEqual(expect.arrayContaining(["test_echo", "test_count", "say_hello", "query", "describe"]));
      for (const name of listed) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
      for (const name of ["test_echo", "test.echo"]) {
        const result = await client.callTool({ name, arguments: { text: name } });
        expect(result.structuredContent).toEqual({ text: name });
      }
      await expect(client.callTool({ name: "test-echo", arguments: {} })).rejects.toThrow(/Unknown tool: test-echo/);
    } finally {
      await client.close();
    }
  });

  test("an invalid MCP_TOOL_NAMES is a configuration error naming the variable", () => {
    expect(() => loadConfig({ MCP_TOOL_NAMES: "camel" })).toThrow(ConfigError);
    expect(() => loadConfig({ MCP_TOOL_NAMES: "camel" })).toThrow(/MCP_TOOL_NAMES="camel"/);
    expect(loadConfig({}).mcpToolNames).toBe("dotted");
  });
});

describe("publishing MCP tool names", () => {
  let t: TestServer;
  const dirs: string[] = [];
  beforeAll(async () => {
    if (!sqlite) throw new Error("no dialect");
    t = await startTestServer(sqlite, { release: fixture("basic") });
  });
  afterAll(async () => {
    await t.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const publish = (files: Record<string, string>) => {
    const dir = releaseWith(files);
    dirs.push(dir);
    return t.publish(dir, `v-${crypto.randomUUID().slice(0, 8)}`);
  };

  test("an mcp.name that is not a valid tool name is refused, naming the action", async () => {
    for (const bad of ["notes.add", "", "with space", "x".repeat(65)]) {
      const refused = publish({ "actions/greet/hello.ts": action(bad) });
      await expect(refused).rejects.toThrow(ReleaseError);
      await expect(refused).rejects.toThrow(/actions\/greet\/hello: mcp.name .* is not a valid tool name/);
    }
  });

  test("two actions sharing a tool name, or one taking a built-in's, are refused with both named", async () => {
    await expect(
      publish({ "actions/greet/hello.ts": action("same"), "actions/greet/bye.ts": action("same") }),
    ).rejects.toThrow(/greet.hello: its mcp.name "same" is already taken by greet.bye|greet.bye: .*greet.hello/);
    await expect(publish({ "actions/greet/hello.ts": action("describe") })).rejects.toThrow(
      /greet.hello: its mcp.name "describe" is already taken by the built-in describe tool/,
    );
    // Its alias is another action's underscored name: ambiguous under MCP_TOOL_NAMES=underscore.
    await expect(publish({ "actions/greet/hello.ts": action("test_echo") })).rejects.toThrow(
      /"test_echo" is already taken/,
    );
    // Two dotted names that underscore to the same tool name.
    await expect(
      publish({
        "actions/a_b/c.ts": action("fine_one").replace(/\n {2}mcp: .*\n/, "\n"),
        "actions/a/b_c.ts": action("fine_two").replace(/\n {2}mcp: .*\n/, "\n"),
      }),
    ).rejects.toThrow(/its underscore tool name "a_b_c" is already taken by/);
    expect(await publish({ "actions/greet/hello.ts": action("greet_hello") })).toMatchObject({ status: "published" });
  });
});
