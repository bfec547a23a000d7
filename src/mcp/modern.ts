import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import { isObject } from "../lib/values.ts";
import type { Principal } from "../sdk/index.ts";
import { MODERN_REQUEST_HEADERS } from "./headers.ts";
import { environmentInstructions, listResources, listResourceTemplates, readResource } from "./resources.ts";
import { type HttpContext, RpcError, rpcErrorBody, rpcErrorOf } from "./rpc-error.ts";
import { cancelTask, createdTask, declaresTasks, getTask, TASKS_EXTENSION, taskExists } from "./tasks.ts";
import { callTool, listTools, type ToolDeps } from "./tools.ts";

/** The stateless revisions, served here without the SDK; older ones go through it after `initialize`. */
export const MODERN_VERSIONS: readonly string[] = ["2026-07-28"];
/** Every version this endpoint speaks, newest first (`server/discover`, and `-32022`'s `data.supported`). */
export const SUPPORTED_VERSIONS: readonly string[] = [...MODERN_VERSIONS, ...SUPPORTED_PROTOCOL_VERSIONS];

const PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion";
const CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities";
const SERVER_INFO = "io.modelcontextprotocol/serverInfo";

const HEADER_MISMATCH = -32020;
const MISSING_CLIENT_CAPABILITY = -32021;
const UNSUPPORTED_VERSION = -32022;

/**
 * How long a client may reuse a list, discover or schema answer. No change notification can reach a
 * stateless JSON-only client, so this bounds how long it may hold tools a release switch removed (a call
 * to one answers -32602, on which clients re-list).
 */
export const LIST_TTL_MS = 30_000;

/** Requests that name a parameter in `Mcp-Name`, and which parameter. */
const NAMED_BY: Record<string, "name" | "uri" | "taskId"> = {
  "tools/call": "name",
  "resources/read": "uri",
  "prompts/get": "name",
  // The Tasks extension routes by task.
  "tasks/get": "taskId",
  "tasks/update": "taskId",
  "tasks/cancel": "taskId",
};

/** A request in the 2026-07-28 envelope: its `_meta` names a protocol version, or its header a modern one. */
export function isModernRequest(request: Request, body: unknown): boolean {
  const header = request.headers.get("mcp-protocol-version");
  if (header !== null && MODERN_VERSIONS.includes(header)) return true;
  return (
    isObject(body) && isObject(body.params) && isObject(body.params._meta) && PROTOCOL_VERSION in body.params._meta
  );
}

type Id = string | number | null;

const errorResponse = (id: Id, error: RpcError) => Response.json(rpcErrorBody(id, error), { status: error.status });

/**
 * Serves one request under 2026-07-28: no handshake, every request self-contained. Checked in the order
 * the revision's errors need: the envelope (`_meta`, -32602), then headers against the body (-32020),
 * then the version (-32022), then the method (404, -32601). Errors carry the request's id; one the
 * handler did not expect is -32603 with a fixed message (`rpcErrorOf`).
 */
export async function answerModern(
  deps: ToolDeps,
  serverVersion: string,
  request: Request,
  message: unknown,
  principal: Principal,
  context: HttpContext,
): Promise<Response> {
  const id: Id =
    isObject(message) && (typeof message.id === "string" || typeof message.id === "number") ? message.id : null;
  try {
    const checked = checkRequest(request, message);
    if (checked === "notification") return new Response(null, { status: 202 });
    const result = await dispatch(deps, serverVersion, principal, checked, context);
    return Response.json({ jsonrpc: "2.0", id, result: { resultType: "complete", ...result } });
  } catch (error) {
    const method = isObject(message) ? message.method : undefined;
    return errorResponse(id, rpcErrorOf(error, deps.log, context, { id, method }));
  }
}

function checkRequest(request: Request, message: unknown): "notification" | Checked {
  const accept = request.headers.get("accept") ?? "";
  if (!accept.includes("application/json") || !accept.includes("text/event-stream")) {
    throw new RpcError(
      406,
      -32600,
      "Not Acceptable: the client must accept both application/json and text/event-stream",
    );
  }
  if (!request.headers.get("content-type")?.includes("application/json")) {
    throw new RpcError(415, -32600, "Unsupported Media Type: the body must be application/json");
  }
  if (!isObject(message) || message.jsonrpc !== "2.0") {
    throw new RpcError(400, -32600, "Invalid Request: not a JSON-RPC 2.0 message");
  }
  const { method, params = {} } = message;
  if (typeof method !== "string") {
    throw new RpcError(400, -32600, "Invalid Request: a client sends requests and notifications, never responses");
  }
  if (!("id" in message)) return "notification";
  if (typeof message.id !== "string" && typeof message.id !== "number") {
    throw new RpcError(400, -32600, "Invalid Request: id must be a string or a number");
  }
  if (!isObject(params)) throw new RpcError(400, -32602, "Invalid params: params must be an object");
  const meta = params._meta;
  const version = isObject(meta) ? meta[PROTOCOL_VERSION] : undefined;
  if (!isObject(meta) || typeof version !== "string" || !isObject(meta[CLIENT_CAPABILITIES])) {
    throw new RpcError(
      400,
      -32602,
      `Invalid params: _meta must carry ${PROTOCOL_VERSION} (a string) and ${CLIENT_CAPABILITIES} (an object)`,
    );
  }
  checkHeaders(request.headers, version, method, params);
  if (!MODERN_VERSIONS.includes(version)) {
    throw new RpcError(400, UNSUPPORTED_VERSION, "Unsupported protocol version", {
      supported: SUPPORTED_VERSIONS,
      requested: version,
    });
  }
  return { method, params, capabilities: meta[CLIENT_CAPABILITIES] as Record<string, unknown> };
}

interface Checked {
  method: string;
  params: Record<string, unknown>;
  /** The client's capabilities as this request declares them (there is no session to remember them). */
  capabilities: Record<string, unknown>;
}

/** The headers a 2026-07-28 request mirrors from its body must be there and say the same (-32020, 400). */
function checkHeaders(headers: Headers, version: string, method: string, params: Record<string, unknown>) {
  const mismatch = (header: string, sent: string | null, body: string) =>
    new RpcError(
      400,
      HEADER_MISMATCH,
      `Header mismatch: ${header} ${sent === null ? "is missing" : `is ${JSON.stringify(sent)}`} but the body says ${JSON.stringify(body)}`,
    );
  const sentVersion = headers.get(MODERN_REQUEST_HEADERS.version);
  if (sentVersion !== version) throw mismatch("MCP-Protocol-Version", sentVersion, version);
  const sentMethod = headers.get(MODERN_REQUEST_HEADERS.method);
  if (sentMethod !== method) throw mismatch("Mcp-Method", sentMethod, method);
  const named = NAMED_BY[method];
  const value = named === undefined ? undefined : params[named];
  if (typeof value !== "string") return;
  const sentName = headers.get(MODERN_REQUEST_HEADERS.name);
  const decoded = sentName === null ? null : decodeHeaderValue(sentName);
  if (decoded === undefined) {
    throw new RpcError(400, HEADER_MISMATCH, "Header mismatch: Mcp-Name is not valid =?base64?…?= encoding");
  }
  if (decoded !== value) throw mismatch("Mcp-Name", decoded, value);
}

/** A header value as sent, or decoded from the `=?base64?…?=` form; undefined when that form is malformed. */
function decodeHeaderValue(value: string): string | undefined {
  const encoded = /^=\?base64\?(.*)\?=$/.exec(value)?.[1];
  if (encoded === undefined) return value;
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(encoded)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(encoded, "base64"));
  } catch {
    return undefined;
  }
}

async function dispatch(
  deps: ToolDeps,
  serverVersion: string,
  principal: Principal,
  { method, params, capabilities }: Checked,
  { trace }: HttpContext,
): Promise<Record<string, unknown>> {
  switch (method) {
    case "server/discover":
      return {
        supportedVersions: SUPPORTED_VERSIONS,
        capabilities: { tools: {}, resources: {}, extensions: { [TASKS_EXTENSION]: {} } },
        instructions: environmentInstructions(deps),
        _meta: {
          [SERVER_INFO]: { name: "actuate", title: `Actuate environment ${deps.handle}`, version: serverVersion },
        },
        // The same for every caller; the release's description (in the instructions) changes with a switch.
        ttlMs: LIST_TTL_MS,
        cacheScope: "public",
      };
    case "tools/list":
      // Which actions a caller may know of depends on the caller.
      return {
        tools: listTools(deps.engine.activeRelease(), principal, deps.toolNaming),
        ttlMs: LIST_TTL_MS,
        cacheScope: "private",
      };
    case "tools/call":
      // A workflow call becomes a task when the client can poll one; otherwise it answers its admission.
      return callTool(deps, principal, params, {
        asTask: declaresTasks(capabilities) ? createdTask : undefined,
        trace,
      });
    case "resources/list":
      return { resources: listResources(deps), ttlMs: LIST_TTL_MS, cacheScope: "public" };
    case "resources/templates/list":
      return { resourceTemplates: listResourceTemplates(deps), ttlMs: LIST_TTL_MS, cacheScope: "public" };
    case "resources/read": {
      const { uri } = params;
      if (typeof uri !== "string") throw new RpcError(200, -32602, "Invalid params: uri must be a string");
      const read = await readResource(deps, principal, uri);
      if (!read) throw new RpcError(200, -32602, `Resource not found: ${uri}`, { uri });
      // The schema is what this caller may know; a run changes as it goes.
      return { contents: read.contents, ttlMs: read.kind === "run" ? 0 : LIST_TTL_MS, cacheScope: "private" };
    }
    case "tasks/get":
    case "tasks/update":
    case "tasks/cancel":
      return answerTask(deps, principal, method, params, capabilities);
    default:
      throw new RpcError(404, -32601, `Method not found: ${method}`);
  }
}

async function answerTask(
  deps: ToolDeps,
  principal: Principal,
  method: "tasks/get" | "tasks/update" | "tasks/cancel",
  params: Record<string, unknown>,
  capabilities: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  if (!declaresTasks(capabilities)) {
    throw new RpcError(400, MISSING_CLIENT_CAPABILITY, "Missing required client capability", {
      requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
    });
  }
  const { taskId } = params;
  if (typeof taskId !== "string") throw new RpcError(200, -32602, "Invalid params: taskId must be a string");
  const notFound = () => new RpcError(200, -32602, `Task not found: ${taskId}`, { taskId });
  if (method === "tasks/get") {
    const task = await getTask(deps, principal, taskId);
    if (!task) throw notFound();
    return task;
  }
  // No run ever waits for input: there is nothing to update; the call is acknowledged.
  const known =
    method === "tasks/cancel" ? await cancelTask(deps, principal, taskId) : await taskExists(deps, principal, taskId);
  if (!known) throw notFound();
  return {};
}
