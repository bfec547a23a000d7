import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { dialects } from "../support/databases.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

// The v2 TypeScript SDK's own client (@modelcontextprotocol/client), which speaks 2026-07-28 when asked
// to negotiate: `auto` probes with server/discover, a pin skips the probe. Both must reach the modern era
// here and call tools as the signed-in caller; a client left at its default still gets the legacy era.
const [sqlite] = dialects;

async function v2Client(t: TestServer, token: string, versionNegotiation?: ConstructorParameters<typeof Client>[1]) {
  const client = new Client({ name: "actuate-v2-test", version: "1.0.0" }, versionNegotiation);
  const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

describe("MCP: the v2 SDK client", () => {
  let t: TestServer;
  let alice: string;
  beforeAll(async () => {
    if (!sqlite) throw new Error("no dialect");
    t = await startTestServer(sqlite, { release: fixture("workflows") });
    alice = await t.userToken("alice");
  });
  afterAll(() => t.stop());

  for (const [label, negotiation] of [
    ["auto (server/discover probe)", { versionNegotiation: { mode: "auto" } }],
    ["pinned to 2026-07-28", { versionNegotiation: { mode: { pin: "2026-07-28" } } }],
  ] as const) {
    test(`${label}: the modern era; tools listed and called as alice`, async () => {
      const client = await v2Client(t, alice, negotiation as never);
      try {
        expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
        expect(client.getProtocolEra()).toBe("modern");
        const { tools } = await client.listTools();
        expect(tools.map((tool) => tool.name)).toContain("wf.steps");
        const result = await client.callTool({ name: "describe", arguments: {} });
        expect(result.isError).toBeFalsy();
        const admitted = await client.callTool({ name: "wf.steps", arguments: { n: 1 } });
        expect(admitted.isError).toBeFalsy();
        const execution = (admitted._meta as Record<string, { id: string }>)["dev.service/execution"];
        // The run is alice's: she reads it over HTTP with her own token.
        const run = await t.fetch(`/executions/${execution?.id}`, { token: alice });
        expect(run.status).toBe(200);
        expect((await run.json()).principal).toEqual({ kind: "user", id: "alice" });
      } finally {
        await client.close();
      }
    });
  }

  test("left at its default, the v2 client gets the legacy era (initialize, 2025-11-25) and works the same", async () => {
    const client = await v2Client(t, alice);
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe("2025-11-25");
      expect(client.getProtocolEra()).toBe("legacy");
      const result = await client.callTool({ name: "describe", arguments: {} });
      expect(result.isError).toBeFalsy();
    } finally {
      await client.close();
    }
  });

  test("a wrong credential is refused whatever the era", async () => {
    await expect(v2Client(t, "not-a-token", { versionNegotiation: { mode: "auto" } } as never)).rejects.toThrow();
  });
});
