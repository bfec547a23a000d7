import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { Principal } from "../sdk/index.ts";
import { markInvalidArguments } from "./arguments.ts";
import { answerModern, isModernRequest } from "./modern.ts";
import { listResources, listResourceTemplates, readResource, TOOL_INSTRUCTIONS } from "./resources.ts";
import { callTool, listTools, type ToolDeps } from "./tools.ts";

const principalOf = (authInfo: AuthInfo | undefined): Principal => {
  const principal = authInfo?.extra?.principal as Principal | undefined;
  if (!principal) throw new McpError(ErrorCode.InternalError, "request reached MCP without a caller");
  return principal;
};

/**
 * One low-level MCP `Server` (raw JSON Schema tools need it; `McpServer` only takes zod). It holds no
 * per-caller state: the caller arrives with each request as `authInfo`, so instances are pooled.
 */
function buildServer(deps: ToolDeps, version: string): Server {
  const server = new Server(
    { name: "actuate", title: `Actuate environment ${deps.handle}`, version },
    { capabilities: { tools: {}, resources: {} }, instructions: TOOL_INSTRUCTIONS },
  );
  server.setRequestHandler(ListToolsRequestSchema, (_request, extra) => ({
    tools: listTools(deps.engine.currentRelease(), principalOf(extra.authInfo), deps.toolNaming),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args = {}, _meta } = request.params;
    const result = await callTool(deps, principalOf(extra.authInfo), name, args, _meta);
    if (!result) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    return result;
  });
  server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: listResources(deps) }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: listResourceTemplates(deps),
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const { uri } = request.params;
    const read = await readResource(deps, principalOf(extra.authInfo), uri);
    if (!read) throw new McpError(-32002, `Resource not found: ${uri}`, { uri });
    return { contents: read.contents };
  });
  return server;
}

/**
 * Answers one MCP message. A request carrying 2026-07-28 `_meta` (or that version's header) is served
 * by our own stateless handler (`modern.ts`); everything else, `initialize` first, by the SDK under the
 * legacy revisions. Building a `Server` costs about ten times an HTTP invoke, so idle servers are
 * reused; each legacy request still gets a fresh stateless transport, as the SDK requires.
 */
export class McpEndpoint {
  private readonly idle: Server[] = [];

  constructor(
    private readonly deps: ToolDeps,
    private readonly version: string,
    private readonly maxIdle = 64,
  ) {}

  handle(request: Request, parsedBody: unknown, principal: Principal): Promise<Response> {
    if (isModernRequest(request, parsedBody)) {
      return answerModern(this.deps, this.version, request, markInvalidArguments(parsedBody), principal);
    }
    return this.answerLegacy(request, parsedBody, principal);
  }

  private async answerLegacy(request: Request, parsedBody: unknown, principal: Principal): Promise<Response> {
    const server = this.idle.pop() ?? buildServer(this.deps, this.version);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    try {
      await server.connect(transport);
      const authInfo: AuthInfo = { token: "", clientId: principal.id, scopes: [], extra: { principal } };
      return await transport.handleRequest(request, { parsedBody: markInvalidArguments(parsedBody), authInfo });
    } finally {
      await server.close();
      if (this.idle.length < this.maxIdle) this.idle.push(server);
    }
  }
}
