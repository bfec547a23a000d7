import type { IncomingHttpHeaders } from "node:http";
import type Provider from "oidc-provider";
import type { KoaContextWithOIDC } from "oidc-provider";
import { errors } from "oidc-provider";
import { loggable, publicErrorOf } from "../../lib/database-errors.ts";
import { ERROR_STATUS } from "../../lib/errors.ts";
import type { Log } from "../../observe/log.ts";

/** As every adapter tells a caller while the database is away (http/errors.ts). */
const RETRY_AFTER_SECONDS = "5";

export interface FailureAnswer {
  status: number;
  headers: Record<string, string>;
  body: { ok: false; error: string; message: string } & Record<string, unknown>;
}

/** The id of the public request the relay (http/oauth.ts) passed on, for the authority's log lines. */
export function relayedRequestId(headers: IncomingHttpHeaders): string | undefined {
  const id = headers["x-request-id"];
  return typeof id === "string" ? id : undefined;
}

/**
 * What the authority answers for an error that neither oidc-provider nor its pages answered: a refusal
 * of ours as it is, a database that cannot be reached as `database_unavailable` (503), anything else
 * as `internal_error` with a fixed message. The error's text never reaches the client; the log gets
 * its stack (without a failed query's parameters) and the id of the request.
 */
export function failureAnswer(error: unknown, log: Log, reqId: string | undefined): FailureAnswer {
  const refusal = publicErrorOf(error);
  if (refusal) {
    return {
      status: ERROR_STATUS[refusal.code],
      headers: refusal.code === "database_unavailable" ? { "retry-after": RETRY_AFTER_SECONDS } : {},
      body: { ok: false, error: refusal.code, message: refusal.message, ...refusal.fields },
    };
  }
  log(`the authority failed: ${loggable(error)}`, { level: "error", reqId });
  return {
    status: ERROR_STATUS.internal_error,
    headers: {},
    body: { ok: false, error: "internal_error", message: "the server failed to answer this request" },
  };
}

/**
 * A step of the sign-in or consent pages that failed: an interaction that expired or belongs to no
 * cookie is said so, oidc-provider's other refusals keep their OAuth error, anything else is a failure.
 */
export function interactionFailureAnswer(error: unknown, log: Log, reqId: string | undefined): FailureAnswer {
  if (error instanceof errors.SessionNotFound) {
    return {
      status: 400,
      headers: {},
      body: { ok: false, error: "invalid_request", message: "the sign-in expired; start again from the client" },
    };
  }
  if (error instanceof errors.OIDCProviderError && error.expose) {
    return {
      status: error.statusCode,
      headers: {},
      body: { ok: false, error: error.error, message: error.error_description ?? error.error },
    };
  }
  return failureAnswer(error, log, reqId);
}

/**
 * oidc-provider answers an unexpected error itself ("server_error", "oops! something went wrong",
 * whether the database is down or a bug; never at a client's redirect URI) and reports it by an event.
 * Registered before its other middleware, this turns that answer into ours (`failureAnswer`), and
 * catches what would reach Koa's own handler (a plain-text 500 and a line on stderr).
 */
export function answerProviderFailures(provider: Provider, log: Log): void {
  // Keyed by Koa's context of the request, which the event and the middleware share.
  const failures = new WeakMap<object, unknown>();
  provider.on("server_error", (ctx: KoaContextWithOIDC, error: unknown) => failures.set(ctx, error));
  provider.use(async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      failures.set(ctx, error);
    }
    if (!failures.has(ctx)) return;
    const answer = failureAnswer(failures.get(ctx), log, relayedRequestId(ctx.headers));
    ctx.status = answer.status;
    ctx.set(answer.headers);
    ctx.body = answer.body;
  });
}
