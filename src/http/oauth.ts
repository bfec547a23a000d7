import { Elysia } from "elysia";
import { loggable } from "../lib/database-errors.ts";
import type { Log } from "../observe/log.ts";
import { readBytesBody } from "./body.ts";
import { errorResponse } from "./errors.ts";
import { requestIdOf } from "./observe.ts";
import { requestTarget } from "./request-target.ts";

/** Forms and registrations are small; the limit holds while reading, so a larger body is never held. */
const BODY_LIMIT = 64 * 1024;
const INTERNAL_MESSAGE = "the server failed to answer this request";
/** Hop-by-hop and length headers are the proxy's own to set. */
const DROPPED = new Set(["host", "connection", "keep-alive", "transfer-encoding", "content-length", "accept-encoding"]);

/**
 * Every refusal as our error bodies are (`ok: false`, `error`, `message`), keeping OAuth's own fields
 * (`error`, `error_description`) that clients read: the two agree on `error`. Plain-text answers (an
 * unknown path) become `not_found` / `invalid_request`, or `internal_error` without their text.
 */
function errorBody(status: number, text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  if (parsed && typeof parsed === "object" && typeof (parsed as { error?: unknown }).error === "string") {
    const oauth = parsed as { error: string; error_description?: string; message?: string };
    return { ok: false, ...oauth, message: oauth.error_description ?? oauth.message ?? oauth.error };
  }
  if (status >= 500) return { ok: false, error: "internal_error", message: INTERNAL_MESSAGE };
  return {
    ok: false,
    error: status === 404 || status === 405 ? "not_found" : "invalid_request",
    message: text.trim() || `the authority answered ${status}`,
  };
}

export interface OAuthRouteOptions {
  /** The built-in authority's loopback origin, started on first use. */
  authority: () => Promise<{ origin: string }>;
  publicUrl: () => string;
  log: Log;
}

/**
 * The built-in authority's endpoints (auth/authority/), served by this server: requests are relayed
 * to the authority's loopback server with PUBLIC_URL's host and scheme and the caller's address in
 * X-Forwarded-*.
 * RFC 8414 metadata is the authority's OpenID metadata (the same document).
 */
export const oauthRoutes = (options: OAuthRouteOptions) => {
  const relay = async (request: Request, path: string, clientAddress: string | undefined) => {
    const { origin } = await options.authority();
    const headers = new Headers();
    for (const [name, value] of request.headers) if (!DROPPED.has(name)) headers.set(name, value);
    const publicUrl = new URL(options.publicUrl());
    // The public address, not the request's Host: the authority's URLs must not follow a forged header.
    headers.set("x-forwarded-host", publicUrl.host);
    headers.set("x-forwarded-proto", publicUrl.protocol.replace(":", ""));
    if (clientAddress) headers.set("x-forwarded-for", clientAddress);
    // The authority's log lines name the request as this server's do.
    const reqId = requestIdOf(request);
    if (reqId) headers.set("x-request-id", reqId);
    const body =
      request.method === "GET" || request.method === "HEAD" ? undefined : await readBytesBody(request, BODY_LIMIT);
    let answer: Response;
    let payload: ArrayBuffer;
    try {
      answer = await fetch(`${origin}${path}${requestTarget(request).search}`, {
        method: request.method,
        headers,
        body,
        redirect: "manual",
      });
      payload = await answer.arrayBuffer();
    } catch (error) {
      // The authority is this process's own server: its failing is a bug, never "the database", whatever
      // code the socket's error carries (ECONNREFUSED, ECONNRESET).
      options.log(`the relay to the authority failed: ${loggable(error)}`, { level: "error", reqId });
      return errorResponse("internal_error", INTERNAL_MESSAGE);
    }
    const out = new Headers(answer.headers);
    out.delete("content-encoding");
    out.delete("content-length");
    // A page for a person (the sign-in form again, with its message) stays a page.
    const page = answer.headers.get("content-type")?.startsWith("text/html") ?? false;
    if (answer.status < 400 || page) return new Response(payload, { status: answer.status, headers: out });
    out.set("content-type", "application/json");
    return new Response(JSON.stringify(errorBody(answer.status, new TextDecoder().decode(payload))), {
      status: answer.status,
      headers: out,
    });
  };
  // Dynamic registration is open to any page (no cookie, nothing of anyone's): oidc-provider answers no
  // CORS there, and browser-based MCP clients (the Inspector) register from their page.
  const REGISTRATION = "/oauth/register";
  const openToAnyOrigin = (response: Response) => {
    response.headers.set("access-control-allow-origin", "*");
    return response;
  };
  return new Elysia({ name: "oauth" })
    .options(
      REGISTRATION,
      () =>
        new Response(null, {
          status: 204,
          headers: {
            "access-control-allow-origin": "*",
            "access-control-allow-methods": "POST",
            "access-control-allow-headers": "content-type, authorization",
            "access-control-max-age": "7200",
          },
        }),
    )
    .post(REGISTRATION, async ({ request, server }) =>
      openToAnyOrigin(await relay(request, REGISTRATION, server?.requestIP(request)?.address)),
    )
    .get("/.well-known/oauth-authorization-server", ({ request, server }) =>
      relay(request, "/.well-known/openid-configuration", server?.requestIP(request)?.address),
    )
    .get("/.well-known/openid-configuration", ({ request, server }) =>
      relay(request, "/.well-known/openid-configuration", server?.requestIP(request)?.address),
    )
    .all("/oauth/*", ({ request, server }) =>
      relay(request, requestTarget(request).path, server?.requestIP(request)?.address),
    );
};
