import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { TestServer } from "./server.ts";

/** The MCP SDK's own client, connected to the server's /mcp with a bearer token. */
export async function mcpClient(t: TestServer, token: string): Promise<Client> {
  const client = new Client({ name: "actuate-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}
