import { loggable, publicErrorOf } from "../lib/database-errors.ts";
import type { Log } from "../observe/log.ts";
import type { SpanParent } from "../observe/tracing.ts";

export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;

/**
 * A JSON-RPC error as the client is to read it. Thrown from a handler the SDK runs, its code, message
 * and data go on the wire as they are (an `McpError`'s message carries "MCP error <code>: " in front,
 * which clients print again). `status` is the HTTP status of a 2026-07-28 answer: a handler's errors
 * stay in band, 200.
 */
export class RpcError {
  constructor(
    readonly status: number,
    readonly code: number,
    readonly message: string,
    readonly data?: unknown,
  ) {}
}

/** What the HTTP adapter knows of the request a message came in. */
export interface HttpContext {
  /** The request's span: the parent of the executions a call makes. */
  trace?: SpanParent;
  /** The request's id in the server's log (its access line's `reqId`). */
  reqId?: string;
}

/** The message an error answers, for the log. */
interface Failed {
  id: unknown;
  method: unknown;
}

/**
 * What a client is told of an error thrown while answering, in either era: a JSON-RPC error as it is; a
 * refusal (the database away while a resource is read) -32603 with its message and `data.error` its
 * code; anything else is a bug: logged with its stack and the request's ids, answered -32603 with a
 * fixed message, since its text (a failed statement, its parameters) is the server's, not the caller's.
 */
export function rpcErrorOf(error: unknown, log: Log, context: HttpContext, failed: Failed): RpcError {
  if (error instanceof RpcError) return error;
  const refusal = publicErrorOf(error);
  if (refusal) return new RpcError(200, INTERNAL_ERROR, refusal.message, { error: refusal.code, ...refusal.fields });
  log(`MCP ${String(failed.method)} failed: ${loggable(error)}`, {
    level: "error",
    reqId: context.reqId,
    rpcId: failed.id,
  });
  return new RpcError(200, INTERNAL_ERROR, "internal error");
}

/** A JSON-RPC error answer (the id is null when the message had none readable). */
export const rpcErrorBody = (id: string | number | null, { code, message, data }: RpcError) => ({
  jsonrpc: "2.0" as const,
  id,
  error: { code, message, ...(data === undefined ? {} : { data }) },
});
