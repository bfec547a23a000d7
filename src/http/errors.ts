import { Elysia } from "elysia";
import { QueryRejected } from "../data/errors.ts";
import { EngineError, type EngineErrorCode } from "../engine/errors.ts";
import { InvalidPath } from "../files/paths.ts";
import { FileNotFound, SignedContentTypeMismatch } from "../files/service.ts";
import { SignedUrlRefused } from "../files/signing.ts";
import { TooLarge } from "../files/storage.ts";
import { isDatabaseUnavailable, loggable } from "../store/unavailable.ts";
import { type Route, routeMisses } from "./methods.ts";

/** A refusal that only exists at the HTTP boundary (credentials, body size). */
export class HttpError extends Error {
  override name = "HttpError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** The client stopped sending before the body's end (the connection closed): an ordinary 400, not a bug. */
export class BodyAborted extends HttpError {
  constructor() {
    super(400, "invalid_request", "the body broke off before its end");
  }
}

/** Seconds a client is told to wait before trying again while the database is away. */
const RETRY_AFTER_SECONDS = "5";

const databaseUnavailable = () =>
  errorResponse(
    503,
    "database_unavailable",
    "the database cannot be reached; try again shortly",
    {},
    { "retry-after": RETRY_AFTER_SECONDS },
  );

const engineStatus: Record<EngineErrorCode, number> = {
  invalid_request: 400,
  action_contract_validation_failed: 400,
  access_denied: 403,
  action_not_found: 404,
  execution_not_found: 404,
  run_not_found: 404,
  REQUEST_CONFLICT: 409,
  run_not_cancelable: 409,
  no_active_release: 503,
};

export function errorResponse(
  status: number,
  code: string,
  message: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Response {
  return Response.json({ ok: false, error: code, message, ...extra }, { status, headers });
}

/**
 * The one place errors become responses. Every body is JSON with `ok:false` and `error`; anything
 * not recognised is logged and answered as a JSON 500, never as HTML. `routes` are the app's, read when
 * a request first finds none (they are all registered by then).
 */
export const errorHandling = (log: (message: string) => void, routes: () => readonly Route[]) => {
  let missOf: ReturnType<typeof routeMisses> | undefined;
  /** No route took the request: a wrong method on a known path (405 with Allow), a WebSocket without upgrade, or 404. */
  const noRoute = (request: Request) => {
    missOf ??= routeMisses(routes());
    const miss = missOf(request.method, new URL(request.url).pathname);
    if (miss.kind === "method") {
      const allow = miss.allow.join(", ");
      return errorResponse(405, "method_not_allowed", `${request.method} is not allowed here: ${allow}`, {}, { allow });
    }
    if (miss.kind === "upgrade") {
      return errorResponse(
        426,
        "upgrade_required",
        "this endpoint is a WebSocket; connect with an upgrade",
        {},
        {
          upgrade: "websocket",
        },
      );
    }
    return errorResponse(404, "not_found", "no such endpoint");
  };
  return new Elysia({ name: "error-handling" }).onError({ as: "global" }, ({ code, error, request }) => {
    if (error instanceof EngineError)
      return errorResponse(engineStatus[error.code], error.code, error.message, error.details);
    if (error instanceof InvalidPath) return errorResponse(400, "invalid_path", error.message);
    if (error instanceof FileNotFound) return errorResponse(404, "file_not_found", error.message);
    if (error instanceof TooLarge)
      return errorResponse(413, "payload_too_large", error.message, { details: { limitBytes: error.limit } });
    if (error instanceof SignedUrlRefused) return errorResponse(403, error.code, error.message);
    if (error instanceof SignedContentTypeMismatch) return errorResponse(403, "signed_url_invalid", error.message);
    if (error instanceof QueryRejected) return errorResponse(400, "data_provider_rejected", error.message);
    if (error instanceof BodyAborted) log(`${request.method} ${new URL(request.url).pathname}: ${error.message} (400)`);
    if (error instanceof HttpError)
      return errorResponse(error.status, error.code, error.message, error.details, error.headers);
    switch (code) {
      case "NOT_FOUND":
        return noRoute(request);
      case "PARSE":
        return errorResponse(400, "invalid_request", "the body is not valid JSON");
      case "VALIDATION":
        return errorResponse(400, "invalid_request", "the request does not fit the endpoint", {
          details: {
            issues: error.all.map((issue) => ({
              where: `/${error.type}${"path" in issue ? issue.path : ""}`,
              code: "invalid",
              message: issue.summary ?? ("message" in issue ? issue.message : "invalid"),
            })),
          },
        });
      case "INVALID_COOKIE_SIGNATURE":
      case "INVALID_FILE_TYPE":
        return errorResponse(400, "invalid_request", error.message);
    }
    if (isDatabaseUnavailable(error)) return databaseUnavailable();
    log(`unhandled error: ${loggable(error)}`);
    return errorResponse(500, "internal_error", "the server failed to answer this request");
  });
};
