import { Elysia, ValidationError } from "elysia";
import { loggable, publicErrorOf } from "../lib/database-errors.ts";
import { ERROR_STATUS, type ErrorCode, PublicError } from "../lib/errors.ts";
import type { Log } from "../observe/log.ts";
import { BodyAborted } from "./body.ts";
import { type Route, routeMisses } from "./methods.ts";
import { noteErrorStatus, requestIdOf } from "./observe.ts";
import { requestTarget } from "./request-target.ts";

/** A refusal whose HTTP answer needs headers (the credential challenge). */
export class HttpError extends PublicError {
  override name = "HttpError";
  constructor(
    code: ErrorCode,
    message: string,
    readonly headers: Record<string, string>,
  ) {
    super(code, message);
  }
}

/**
 * The client closed the connection while its body was still being read: what a streamed upload's read
 * throws then (Bun aborts the request's signal). Not a bug: answered as BodyAborted, which no one reads.
 */
const clientLeft = (error: unknown, request: Request) =>
  error instanceof DOMException && error.name === "AbortError" && request.signal.aborted;

/** Seconds a client is told to wait before trying again while the database is away. */
const RETRY_AFTER_SECONDS = "5";

/** `{ ok:false, error, message, …fields }` with the code's status from the one table. */
export function errorResponse(
  code: ErrorCode,
  message: string,
  fields: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Response {
  return Response.json({ ok: false, error: code, message, ...fields }, { status: ERROR_STATUS[code], headers });
}

/**
 * The one place errors become responses. Every body is JSON with `ok:false` and `error`; anything
 * not recognised is logged and answered as a JSON 500, never as HTML. `routes` are the app's, read when
 * a request first finds none (they are all registered by then).
 */
export const errorHandling = (log: Log, routes: () => readonly Route[]) => {
  let missOf: ReturnType<typeof routeMisses> | undefined;
  /** No route took the request: a wrong method on a known path (405 with Allow), a WebSocket without upgrade, or 404. */
  const noRoute = (request: Request) => {
    missOf ??= routeMisses(routes());
    const miss = missOf(request.method, requestTarget(request).path);
    if (miss.kind === "method") {
      const allow = miss.allow.join(", ");
      return errorResponse("method_not_allowed", `${request.method} is not allowed here: ${allow}`, {}, { allow });
    }
    if (miss.kind === "upgrade") {
      return errorResponse(
        "upgrade_required",
        "this endpoint is a WebSocket; connect with an upgrade",
        {},
        { upgrade: "websocket" },
      );
    }
    return errorResponse("not_found", "no such endpoint");
  };
  const answer = (code: string | number, thrown: unknown, request: Request): Response => {
    const error = clientLeft(thrown, request) ? new BodyAborted() : thrown;
    if (error instanceof BodyAborted) {
      log(`${request.method} ${requestTarget(request).path}: ${error.message} (400)`, {
        level: "warn",
        reqId: requestIdOf(request),
      });
    }
    const refusal = publicErrorOf(error);
    if (refusal) {
      const headers = {
        ...(refusal instanceof HttpError ? refusal.headers : {}),
        ...(refusal.code === "database_unavailable" ? { "retry-after": RETRY_AFTER_SECONDS } : {}),
      };
      return errorResponse(refusal.code, refusal.message, refusal.fields, headers);
    }
    switch (code) {
      case "NOT_FOUND":
        return noRoute(request);
      case "VALIDATION": {
        if (!(error instanceof ValidationError)) break;
        // A route's `query:` schema (http/query-string.ts) refused the request; its issues name their parameter.
        const issues = error.all.map((issue) => ({
          where: `/${error.type}${"path" in issue && issue.path !== "root" ? `/${issue.path}` : ""}`,
          code: "invalid",
          message: issue.summary ?? "invalid",
        }));
        return errorResponse("invalid_request", issues[0]?.message ?? "the request does not fit the endpoint", {
          details: { issues },
        });
      }
    }
    log(`unhandled error: ${loggable(error)}`, { level: "error", reqId: requestIdOf(request) });
    return errorResponse("internal_error", "the server failed to answer this request");
  };
  return new Elysia({ name: "error-handling" }).onError({ as: "global" }, ({ code, error, request }) => {
    const response = answer(code, error, request);
    noteErrorStatus(request, response.status);
    return response;
  });
};
