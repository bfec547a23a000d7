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
import { describeRelease } from "../engine/describe.ts";
import { toRunResource } from "../engine/workflows/view.ts";
import { PublicError } from "../lib/errors.ts";
import { uuidOrNull } from "../lib/ids.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan, tooDeepMessage } from "../lib/json-depth.ts";
import type { SpanParent } from "../observe/tracing.ts";
import type { Principal } from "../sdk/index.ts";
import { callTool, INVALID_ARGUMENTS_META, listTools, type ToolDeps } from "./tools.ts";
import { runResourceUri, schemaResourceUri } from "./uris.ts";

const resourceNotFound = (uri: string) => new McpError(-32002, `Resource not found: ${uri}`, { uri });

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
    {
      capabilities: { tools: {}, resources: {} },
      instructions:
        "Each tool named <domain>.<action> runs that action as you, the signed-in caller, and records an execution (see _meta['dev.service/execution']). Use `describe` to learn the actions and their schemas, and `query` to read data.",
    },
  );
  const uri = schemaResourceUri(deps.handle);
  server.setRequestHandler(ListToolsRequestSchema, (_request, extra) => ({
    tools: listTools(deps.engine.currentRelease(), principalOf(extra.authInfo)),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args = {}, _meta } = request.params;
    // An agent's trace goes on into the execution (W3C traceparent in _meta), else the HTTP request's.
    const traceparent = _meta?.traceparent;
    const trace = typeof traceparent === "string" ? traceparent : (extra.authInfo?.extra?.trace as SpanParent);
    let result: Awaited<ReturnType<typeof callTool>>;
    try {
      result = await callTool(deps, principalOf(extra.authInfo), name, args, _meta, trace);
    } catch (error) {
      deps.telemetry.mcpCalled(name, "error");
      throw error;
    }
    // Only the names of existing tools become label values (callers choose the name).
    if (!result) {
      deps.telemetry.mcpCalled("unknown", "unknown_tool");
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    }
    deps.telemetry.mcpCalled(name, result.isError ? "error" : "ok");
    return result;
  });
  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: [
      {
        uri,
        name: "schema",
        title: "Environment schema",
        description: "Domains, entities, links and actions of the active release (the same as the describe tool).",
        mimeType: "application/json",
      },
    ],
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [
      {
        uriTemplate: runResourceUri(deps.handle, "{runId}"),
        name: "run",
        title: "Workflow run",
        description:
          "A workflow run you started, with its status, output or error, and steps (what GET /runs/{id} answers). A value over 4 KiB is left out and its size given (e.g. outputTruncated: { bytes }), as are steps past a budget (stepsTruncated: { shown, total }); statusUrl answers them whole over HTTP with the same bearer token. A workflow tool call answers its runId.",
        mimeType: "application/json",
      },
    ],
  }));
  const runsPrefix = runResourceUri(deps.handle, "");
  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const requested = request.params.uri;
    if (requested === uri) {
      const text = JSON.stringify(
        describeRelease(deps.handle, deps.engine.currentRelease(), principalOf(extra.authInfo)),
      );
      return { contents: [{ uri, mimeType: "application/json", text }] };
    }
    const runId = requested.startsWith(runsPrefix) ? uuidOrNull(requested.slice(runsPrefix.length)) : null;
    if (runId === null) throw resourceNotFound(requested);
    try {
      const { run, steps } = await deps.engine.run(principalOf(extra.authInfo), runId);
      const text = JSON.stringify(toRunResource(run, steps, deps.runUrl(run.id)));
      return { contents: [{ uri: requested, mimeType: "application/json", text }] };
    } catch (error) {
      // Another caller's run is as absent as a missing one.
      if (error instanceof PublicError && error.code === "run_not_found") throw resourceNotFound(requested);
      throw error;
    }
  });
  return server;
}

/**
 * A tools/call whose `arguments` is not an object would be refused by the SDK's schema check with a
 * zod dump (-32602) before any tool code runs; one nested too deep would reach recursive code. Either is
 * passed on with empty arguments and a marker naming the issue, so the tool answers a readable input
 * refusal like any other.
 */
function markInvalidArguments(message: unknown): unknown {
  if (!isObject(message) || message.method !== "tools/call" || !isObject(message.params)) return message;
  const problem = argumentsProblem(message.params.arguments);
  if (problem === null) return message;
  const meta = isObject(message.params._meta) ? message.params._meta : {};
  return {
    ...message,
    params: { ...message.params, arguments: {}, _meta: { ...meta, [INVALID_ARGUMENTS_META]: problem } },
  };
}

/** Why `arguments` cannot be a tool's input (the issue a refusal names), or null when it can. */
function argumentsProblem(args: unknown): { code: string; message: string } | null {
  if (args === undefined) return null;
  if (isObject(args)) {
    // The object is the input, one level below the body's root.
    return nestsDeeperThan(args, MAX_JSON_DEPTH - 1) ? { code: "too_deep", message: tooDeepMessage } : null;
  }
  const type = args === null ? "null" : Array.isArray(args) ? "an array" : `a ${typeof args}`;
  return { code: "invalid_type", message: `arguments must be an object, not ${type}` };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Answers one MCP message. Building a `Server` costs about ten times an HTTP invoke, so idle servers
 * are reused; each request still gets a fresh stateless transport, as the SDK requires.
 */
export class McpEndpoint {
  private readonly idle: Server[] = [];

  constructor(
    private readonly deps: ToolDeps,
    private readonly version: string,
    private readonly maxIdle = 64,
  ) {}

  async handle(request: Request, parsedBody: unknown, principal: Principal, trace?: SpanParent): Promise<Response> {
    const server = this.idle.pop() ?? buildServer(this.deps, this.version);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    try {
      await server.connect(transport);
      const authInfo: AuthInfo = { token: "", clientId: principal.id, scopes: [], extra: { principal, trace } };
      return await transport.handleRequest(request, { parsedBody: markInvalidArguments(parsedBody), authInfo });
    } finally {
      await server.close();
      if (this.idle.length < this.maxIdle) this.idle.push(server);
    }
  }
}
