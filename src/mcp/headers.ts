/**
 * The request headers an MCP client sends besides `Authorization`, `Content-Type` and `Accept`, by era:
 * what a CORS preflight for /mcp must allow (`http/cors.ts`). Kept apart from the MCP modules, which
 * load the SDK: the CORS plugin runs at start-up.
 */

/** 2025-era clients (the SDK's): the negotiated version, a session id and a resumption id (never used here, sent anyway). */
export const LEGACY_REQUEST_HEADERS = ["mcp-protocol-version", "mcp-session-id", "last-event-id"] as const;

/**
 * What a 2026-07-28 request mirrors from its body (`modern.ts` checks each against it). Its clients send
 * `Mcp-Param-*` only for a tool that declares `x-mcp-header`, which none of ours does.
 */
export const MODERN_REQUEST_HEADERS = {
  version: "mcp-protocol-version",
  method: "mcp-method",
  name: "mcp-name",
} as const;

/** Every MCP request header of either era, once. */
export const MCP_REQUEST_HEADERS: readonly string[] = [
  ...new Set([...LEGACY_REQUEST_HEADERS, ...Object.values(MODERN_REQUEST_HEADERS)]),
];
