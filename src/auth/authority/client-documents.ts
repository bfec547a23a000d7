import type { AdapterPayload } from "oidc-provider";
import { isLoopbackHost } from "../../lib/loopback.ts";
import { applicationTypeOf } from "./redirects.ts";

/** Documents are small (the MCP specification suggests 5 KiB); anything larger is refused unread. */
const MAX_BYTES = 5 * 1024;
const FETCH_TIMEOUT_MS = 5_000;

/**
 * Client ID Metadata Documents (MCP authorization, 2025-11-25): a client names itself by an https
 * URL and publishes its metadata there, instead of registering. Such a `client_id` is fetched (no
 * redirects, 5 s, 5 KiB), must name itself, and becomes a public client (PKCE, no secret). Plain http
 * only where the environment itself is on a loopback address (development, tests); host names that
 * are private addresses are refused outright, so the authority cannot be used to probe a network.
 */
export function isClientDocumentUrl(clientId: string, allowLoopbackHttp: boolean): boolean {
  const url = URL.parse(clientId);
  if (!url || url.hash || url.username || url.password || url.pathname === "/" || url.search) return false;
  const loopback = isLoopbackHost(url.hostname);
  if (url.protocol === "http:") return allowLoopbackHttp && loopback;
  return url.protocol === "https:" && !loopback && !privateAddress(url.hostname);
}

export async function fetchClientDocument(clientId: string): Promise<AdapterPayload | undefined> {
  const response = await fetch(clientId, {
    redirect: "error",
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    headers: { accept: "application/json" },
  }).catch(() => null);
  if (!response?.ok) return undefined;
  const text = await readLimited(response);
  if (text === null) return undefined;
  const document = safeJson(text);
  if (!document || document.client_id !== clientId) return undefined;
  const redirects = document.redirect_uris;
  if (!Array.isArray(redirects) || redirects.length === 0 || !redirects.every((r) => typeof r === "string")) {
    return undefined;
  }
  // A document cannot hold a secret: the client is public whatever it says. Its redirect URIs follow
  // the rules of a registration (redirects.ts).
  return {
    client_id: clientId,
    client_name: typeof document.client_name === "string" ? document.client_name : clientId,
    application_type: isApplicationType(document.application_type)
      ? document.application_type
      : applicationTypeOf(redirects),
    redirect_uris: redirects as string[],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
    ...(typeof document.client_uri === "string" ? { client_uri: document.client_uri } : {}),
    ...(typeof document.logo_uri === "string" ? { logo_uri: document.logo_uri } : {}),
  };
}

const isApplicationType = (value: unknown): value is "native" | "web" => value === "native" || value === "web";

async function readLimited(response: Response): Promise<string | null> {
  const reader = response.body?.getReader();
  if (!reader) return null;
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BYTES) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function safeJson(text: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/** IP literals of private, link-local and unique-local ranges (names resolving to them are not checked). */
function privateAddress(host: string): boolean {
  return /^(10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|169\.254\.|0\.|\[f[cd]|\[fe80)/i.test(host);
}
