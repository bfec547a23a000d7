import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import {
  InitializeRequestSchema,
  type JSONRPCRequest,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/sdk/types.js";
import { isObject } from "../lib/values.ts";
import type { Principal } from "../sdk/index.ts";
import { markInvalidArguments } from "./arguments.ts";
import { answerModern, isModernRequest } from "./modern.ts";
import { listResources, listResourceTemplates, readResource, TOOL_INSTRUCTIONS } from "./resources.ts";
import { type HttpContext, INVALID_PARAMS, RpcError, rpcErrorBody, rpcErrorOf } from "./rpc-error.ts";
import { callTool, listTools, type ToolDeps } from "./tools.ts";

/** What the endpoint hands the SDK with each request (`authInfo.extra`): the caller and the HTTP request. */
type Caller = {
  principal: Principal;
  context: HttpContext;
};

/**
 * One low-level MCP `Server` (raw JSON Schema tools need it; `McpServer` only takes zod), which speaks
 * the handshake (`initialize`, `ping`) and the transport. It holds no per-caller state: the caller
 * arrives with each request as `authInfo`, so instances are pooled. Every other request goes to
 * `answerLegacyRequest` as it was sent, not through the SDK's per-method zod schemas, whose refusals
 * are -32603 with the schema's issues as text: its params are checked there, and whatever it throws
 * becomes the error a client may read (`rpcErrorOf`).
 */
function buildServer(deps: ToolDeps, version: string): Server {
  const server = new Server(
    { name: "actuate", title: `Actuate environment ${deps.handle}`, version },
    { capabilities: { tools: {}, resources: {} }, instructions: TOOL_INSTRUCTIONS },
  );
  server.fallbackRequestHandler = async (request, extra) => {
    // `answerLegacy` hands every request over with its caller.
    const { principal, context } = (extra.authInfo as AuthInfo).extra as Caller;
    try {
      return await answerLegacyRequest(deps, request, principal);
    } catch (error) {
      throw rpcErrorOf(error, deps.log, context, request);
    }
  };
  return server;
}

/**
 * The legacy revisions' methods besides the handshake and `tools/call` (which the endpoint answers
 * before the SDK: `answerLegacyCall`).
 */
async function answerLegacyRequest(deps: ToolDeps, { method, params = {} }: JSONRPCRequest, principal: Principal) {
  switch (method) {
    case "tools/list":
      return { tools: listTools(deps.engine.activeRelease(), principal, deps.toolNaming) };
    case "resources/list":
      return { resources: listResources(deps) };
    case "resources/templates/list":
      return { resourceTemplates: listResourceTemplates(deps) };
    case "resources/read": {
      const { uri } = params;
      if (typeof uri !== "string") throw new RpcError(200, INVALID_PARAMS, "Invalid params: uri must be a string");
      const read = await readResource(deps, principal, uri);
      if (!read) throw new RpcError(200, -32002, `Resource not found: ${uri}`, { uri });
      return { contents: read.contents };
    }
    default:
      throw new RpcError(200, -32601, `Method not found: ${method}`);
  }
}

type LegacyRequest = Record<string, unknown> & { id: string | number; method: string };

/**
 * A JSON-RPC request the SDK's transport would hand to its server: the checks it makes first (Accept,
 * Content-Type, protocol version, the envelope), so that what answers before it answers only what it
 * would have let through.
 */
function passesTransportChecks(request: Request, message: unknown): message is LegacyRequest {
  const headers = request.headers;
  const accept = headers.get("accept") ?? "";
  const version = headers.get("mcp-protocol-version");
  return (
    accept.includes("application/json") &&
    accept.includes("text/event-stream") &&
    headers.get("content-type")?.includes("application/json") === true &&
    (version === null || SUPPORTED_PROTOCOL_VERSIONS.includes(version)) &&
    isObject(message) &&
    message.jsonrpc === "2.0" &&
    typeof message.method === "string" &&
    (typeof message.id === "string" || typeof message.id === "number")
  );
}

/**
 * `initialize` stays the SDK's, whose schema refuses malformed params as -32603 with the zod issues as
 * text: checked against that schema here first, the first issue named (-32602).
 */
function initializeProblem(message: LegacyRequest): RpcError | null {
  const parsed = InitializeRequestSchema.safeParse(message);
  const issue = parsed.success ? undefined : parsed.error.issues[0];
  if (!issue) return null;
  return new RpcError(200, INVALID_PARAMS, `Invalid params: ${issue.path.join(".")}: ${issue.message}`);
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

  async handle(request: Request, parsedBody: unknown, principal: Principal, context: HttpContext): Promise<Response> {
    const message = markInvalidArguments(parsedBody);
    if (isModernRequest(request, message)) {
      return answerModern(this.deps, this.version, request, message, principal, context);
    }
    if (passesTransportChecks(request, message)) {
      if (message.method === "tools/call") return this.answerLegacyCall(message, principal, context);
      if (message.method === "initialize") {
        const malformed = initializeProblem(message);
        if (malformed) return Response.json(rpcErrorBody(message.id, malformed));
      }
    }
    // What the transport refuses (406, 415, 400), notifications, and every other request.
    return this.answerLegacy(request, message, { principal, context });
  }

  /**
   * A legacy `tools/call` answered without the SDK's round trip (its zod guards and stream mapping cost
   * several times the call itself). Its params are checked by `callTool`.
   */
  private async answerLegacyCall(message: LegacyRequest, principal: Principal, context: HttpContext) {
    const { id, method, params } = message;
    try {
      const result = await callTool(this.deps, principal, params, { trace: context.trace });
      return Response.json({ jsonrpc: "2.0", id, result });
    } catch (error) {
      return Response.json(rpcErrorBody(id, rpcErrorOf(error, this.deps.log, context, { id, method })));
    }
  }

  private async answerLegacy(request: Request, message: unknown, caller: Caller): Promise<Response> {
    const server = this.idle.pop() ?? buildServer(this.deps, this.version);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    try {
      await server.connect(transport);
      const authInfo: AuthInfo = {
        token: "",
        clientId: caller.principal.id,
        scopes: [],
        extra: caller,
      };
      return await transport.handleRequest(request, { parsedBody: message, authInfo });
    } finally {
      await server.close();
      if (this.idle.length < this.maxIdle) this.idle.push(server);
    }
  }
}
