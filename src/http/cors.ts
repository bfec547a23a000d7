import { Elysia } from "elysia";
import type { CorsOrigins } from "../config.ts";
import { MCP_REQUEST_HEADERS } from "../mcp/headers.ts";
import { INSTANCE_HEADER } from "./instances.ts";
import { requestTarget } from "./request-target.ts";

// Request headers our endpoints read (storage's `path`) and MCP clients of either era send; the rest
// are CORS-safelisted.
const ALLOWED_HEADERS = ["authorization", "content-type", "path", ...MCP_REQUEST_HEADERS].join(", ");
// Response headers a browser script needs beyond the safelisted ones: challenges, 405's Allow, sizes,
// and the instance that answered.
const EXPOSED_HEADERS = `www-authenticate, allow, retry-after, mcp-session-id, content-length, ${INSTANCE_HEADER}`;
const API_METHODS = "GET, POST, PUT, DELETE";
// Chromium caps a cached preflight at two hours; the policy only changes with a restart.
const MAX_AGE = "7200";

/** What one response grants the calling origin. */
interface Grant {
  allowOrigin: string;
  methods: string;
}

const SIGNED_STORAGE = "/storage/signed/";
const RESOURCE_METADATA = "/.well-known/oauth-protected-resource";

/**
 * Who may read a path's responses from a page on `origin`: signed storage URLs and the resource
 * metadata anyone (the signature is the credential; the metadata is public), /mcp only the listed
 * origins (`*` must not loosen its Origin check), every other route the listed origins or, with `*`,
 * any. Credentials are bearer headers, never cookies, so `*` is safe to answer as such.
 */
function grantFor(path: string, origin: string, origins: CorsOrigins): Grant | null {
  if (path.startsWith(SIGNED_STORAGE)) return { allowOrigin: "*", methods: "GET, PUT" };
  if (path === RESOURCE_METADATA || path.startsWith(`${RESOURCE_METADATA}/`))
    return { allowOrigin: "*", methods: "GET" };
  if (origins.listed.includes(origin)) return { allowOrigin: origin, methods: API_METHODS };
  if (origins.any && path !== "/mcp") return { allowOrigin: "*", methods: API_METHODS };
  return null;
}

/**
 * The built-in authority's endpoints answer CORS themselves (oidc-provider: its metadata and keys to
 * any origin, its token and registration endpoints to public clients by their redirect URIs), so
 * browser-based MCP clients (the Inspector) can register and exchange codes.
 */
const answersItsOwnCors = (path: string) =>
  path.startsWith("/oauth/") ||
  path === "/.well-known/oauth-authorization-server" ||
  path === "/.well-known/openid-configuration";

const isPreflight = (request: Request) =>
  request.method === "OPTIONS" && request.headers.has("access-control-request-method");

/**
 * CORS for browsers: answers preflights (204) on every path before routing, and adds the grant to
 * every response of a cross-origin request, error responses included (Elysia merges `set.headers`
 * into whatever answers). A request without Origin, or from an origin granted nothing, is left alone.
 */
export const cors = (origins: CorsOrigins) =>
  new Elysia({ name: "cors" }).onRequest(({ request, set }) => {
    const origin = request.headers.get("origin");
    if (origin === null) return;
    const { path } = requestTarget(request);
    if (answersItsOwnCors(path)) return;
    const grant = grantFor(path, origin, origins);
    if (isPreflight(request)) {
      if (!grant) return new Response(null, { status: 204 });
      return new Response(null, {
        status: 204,
        headers: {
          "access-control-allow-origin": grant.allowOrigin,
          "access-control-allow-methods": grant.methods,
          "access-control-allow-headers": ALLOWED_HEADERS,
          "access-control-max-age": MAX_AGE,
          ...(grant.allowOrigin === "*" ? {} : { vary: "Origin" }),
        },
      });
    }
    if (!grant) return;
    set.headers["access-control-allow-origin"] = grant.allowOrigin;
    set.headers["access-control-expose-headers"] = EXPOSED_HEADERS;
    if (grant.allowOrigin !== "*") set.headers.vary = "Origin";
  });
