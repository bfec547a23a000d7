import { Elysia } from "elysia";
import type { Authenticator } from "../auth/authenticator.ts";
import { nestsDeeperThan, tooDeepMessage } from "../lib/json-depth.ts";
import { isLoopbackHost } from "../lib/loopback.ts";
import type { McpEndpoint } from "../mcp/server.ts";
import type { Principal } from "../sdk/index.ts";
import { unauthorized } from "./auth.ts";
import { MiB, readTextBody } from "./body.ts";
import { holdingConnection } from "./long-wait.ts";
import { requestIdOf, requestSpan } from "./observe.ts";

export interface McpRouteOptions {
  /** Answers one MCP message (built lazily by main.ts: the SDK loads on the first /mcp request). */
  endpoint: Pick<McpEndpoint, "handle">;
  auth: Authenticator;
  publicUrl: () => string;
  /** Origins allowed besides PUBLIC_URL's own: those CORS_ORIGINS lists (its `*` is not one). */
  allowedOrigins: string[];
  /** Bound to a loopback address: then the Host header must name one too (DNS-rebinding defence). */
  loopbackOnly: boolean;
  /** Only for the conformance suite, which cannot send a credential: callers without one act as this user. */
  anonymous?: Principal;
}

// One tool call carries at most an invocation body.
const MCP_BODY_LIMIT = 8 * MiB;

/** A JSON-RPC error without id, in our error envelope (`ok:false`) too. */
const rpcError = (status: number, code: number, message: string) =>
  Response.json({ jsonrpc: "2.0", id: null, ok: false, error: { code, message } }, { status });

/**
 * POST /mcp: one JSON-RPC message per request, one JSON answer, no session and no stream. This adapter
 * only guards (origin, host, credential, body shape); the MCP SDK speaks the protocol and the tools
 * call the same engine as HTTP.
 */
export const mcpRoutes = (options: McpRouteOptions) =>
  new Elysia({ name: "mcp" }).post("/mcp", async ({ request, server }) => {
    const refused = refuseForeignCaller(request, options);
    if (refused) return refused;
    const authentication = await options.auth.authenticate(request.headers.get("authorization"));
    const principal = "principal" in authentication ? authentication.principal : options.anonymous;
    if (!principal)
      throw unauthorized(options.publicUrl(), "refused" in authentication ? authentication.refused : "missing");

    let message: unknown;
    try {
      message = JSON.parse(await readTextBody(request, MCP_BODY_LIMIT));
    } catch (error) {
      if (error instanceof SyntaxError) return rpcError(400, -32700, "Parse error: the body is not valid JSON");
      throw error;
    }
    if (Array.isArray(message))
      return rpcError(400, -32600, "Invalid Request: batches are not supported; send one message per POST");
    // Tool arguments are measured on their own: too deep there is an input refusal the model can read.
    if (nestsDeeperThan(withoutToolArguments(message)))
      return rpcError(400, -32600, `Invalid Request: ${tooDeepMessage}`);
    // A tools/call waits up to WAIT_MS for its execution.
    return withErrorEnvelope(
      await holdingConnection(server, request, () =>
        options.endpoint.handle(request, message, principal, {
          trace: requestSpan(request),
          reqId: requestIdOf(request),
        }),
      ),
    );
  });

function withoutToolArguments(message: unknown): unknown {
  if (typeof message !== "object" || message === null || !("params" in message)) return message;
  const { params } = message as { params: unknown };
  if (typeof params !== "object" || params === null || !("arguments" in params)) return message;
  return { ...message, params: { ...params, arguments: null } };
}

/**
 * DNS-rebinding and cross-site defence. A server bound to loopback answers only requests addressed to
 * a loopback name (or PUBLIC_URL's host). An Origin, when sent, must be the server's own as addressed
 * (same-origin), PUBLIC_URL's, or listed in CORS_ORIGINS.
 */
function refuseForeignCaller(request: Request, options: McpRouteOptions): Response | null {
  const host = request.headers.get("host") ?? "";
  const publicUrl = new URL(options.publicUrl());
  if (options.loopbackOnly) {
    const hostname = host.replace(/:\d+$/, "");
    if (!isLoopbackHost(hostname) && hostname !== publicUrl.hostname) {
      return rpcError(403, -32000, `Forbidden: host ${host} is not this server`);
    }
  }
  const origin = request.headers.get("origin");
  if (origin === null) return null;
  const sameOrigin = originHost(origin) === host;
  if (sameOrigin || origin === publicUrl.origin || options.allowedOrigins.includes(origin)) return null;
  return rpcError(403, -32000, `Forbidden: origin ${origin} is not allowed`);
}

function originHost(origin: string): string | null {
  try {
    return new URL(origin).host;
  } catch {
    return null;
  }
}

/** The SDK's own refusals (406, 415, 400 for a bad protocol version) get `ok:false` like every other error body. */
async function withErrorEnvelope(response: Response): Promise<Response> {
  if (response.status < 400 || !response.headers.get("content-type")?.includes("application/json")) return response;
  const body = (await response.json()) as Record<string, unknown>;
  return Response.json({ ...body, ok: false }, { status: response.status, headers: response.headers });
}
