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
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/sdk/types.js";
import type { SpanParent } from "../observe/tracing.ts";
import type { Principal } from "../sdk/index.ts";
import { isObject, markInvalidArguments } from "./arguments.ts";
import { answerModern, isModernRequest } from "./modern.ts";
import { listResources, listResourceTemplates, readResource, TOOL_INSTRUCTIONS } from "./resources.ts";
import { callTool, listTools, type ToolDeps, unknownTool } from "./tools.ts";

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
    const trace = extra.authInfo?.extra?.trace as SpanParent | undefined;
    const result = await callTool(deps, principalOf(extra.authInfo), name, args, _meta, { trace });
    if (!result) {
      unknownTool(deps);
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    }
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

  async handle(request: Request, parsedBody: unknown, principal: Principal, trace?: SpanParent): Promise<Response> {
    const message = markInvalidArguments(parsedBody);
    if (isModernRequest(request, message)) {
      return answerModern(this.deps, this.version, request, message, principal, trace);
    }
    return (
      (await this.answerLegacyCall(request, message, principal, trace)) ??
      this.answerLegacy(request, message, principal, trace)
    );
  }

  /**
   * A well-formed legacy `tools/call` answered without the SDK's round trip (its zod guards and stream
   * mapping cost several times the call itself), after the same checks the SDK makes: Accept, Content-Type,
   * protocol version, the JSON-RPC envelope and the params' shape. Anything else, an unknown tool
   * included, returns null and goes through the SDK, which answers it as before.
   */
  private async answerLegacyCall(
    request: Request,
    message: unknown,
    principal: Principal,
    trace: SpanParent | undefined,
  ): Promise<Response | null> {
    const headers = request.headers;
    const accept = headers.get("accept") ?? "";
    const version = headers.get("mcp-protocol-version");
    if (
      !accept.includes("application/json") ||
      !accept.includes("text/event-stream") ||
      !headers.get("content-type")?.includes("application/json") ||
      (version !== null && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) ||
      !isObject(message) ||
      message.jsonrpc !== "2.0" ||
      message.method !== "tools/call" ||
      (typeof message.id !== "string" && typeof message.id !== "number") ||
      !isObject(message.params)
    ) {
      return null;
    }
    const { name, arguments: args = {}, _meta } = message.params;
    if (typeof name !== "string" || !isObject(args) || (_meta !== undefined && !isObject(_meta))) return null;
    try {
      const result = await callTool(this.deps, principal, name, args, _meta, { trace });
      return result && Response.json({ jsonrpc: "2.0", id: message.id, result });
    } catch (error) {
      // As the SDK answers a handler that throws.
      const text = error instanceof Error ? error.message : String(error);
      return Response.json({ jsonrpc: "2.0", id: message.id, error: { code: ErrorCode.InternalError, message: text } });
    }
  }

  private async answerLegacy(
    request: Request,
    message: unknown,
    principal: Principal,
    trace: SpanParent | undefined,
  ): Promise<Response> {
    const server = this.idle.pop() ?? buildServer(this.deps, this.version);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    try {
      await server.connect(transport);
      const authInfo: AuthInfo = { token: "", clientId: principal.id, scopes: [], extra: { principal, trace } };
      return await transport.handleRequest(request, { parsedBody: message, authInfo });
    } finally {
      await server.close();
      if (this.idle.length < this.maxIdle) this.idle.push(server);
    }
  }
}
