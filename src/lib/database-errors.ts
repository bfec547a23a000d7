import { PublicError } from "./errors.ts";

/**
 * Errors that say the database cannot be reached now (as opposed to a statement it refused): the
 * connection was refused, closed or timed out, or the server is shutting down or full. Callers answer
 * these with 503 and Retry-After; the pool reconnects by itself once the database is back.
 */
const UNAVAILABLE_CODES = new Set([
  // postgres-js and the socket
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  // PostgreSQL: admin/crash shutdown, cannot connect now, connection exceptions, too many connections
  "57P01",
  "57P02",
  "57P03",
  "08000",
  "08001",
  "08003",
  "08004",
  "08006",
  "53300",
  // SQLite: the file cannot be opened or is locked past busy_timeout
  "SQLITE_CANTOPEN",
  "SQLITE_BUSY",
]);

/** The error a driver threw, under the wrappers around it (drizzle's DrizzleQueryError keeps it as `cause`). */
function rootOf(error: unknown): unknown {
  let current = error;
  for (let i = 0; i < 5 && current instanceof Error && current.cause !== undefined; i++) current = current.cause;
  return current;
}

export function isDatabaseUnavailable(error: unknown): boolean {
  for (const candidate of [error, rootOf(error)]) {
    const code = (candidate as { code?: unknown } | null)?.code;
    if (typeof code === "string" && UNAVAILABLE_CODES.has(code)) return true;
  }
  return false;
}

/**
 * What may be logged of an unexpected error: its stack without drizzle's "Failed query: … params: …"
 * message, whose parameters can hold credentials' hashes and callers' data.
 */
export function loggable(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.name === "DrizzleQueryError" || error.message.startsWith("Failed query:")) {
    const root = rootOf(error);
    return `a database statement failed: ${root instanceof Error ? (root.stack ?? root.message) : String(root)}`;
  }
  // A DOMException's stack is empty.
  return error.stack || `${error.name}: ${error.message}`;
}

/**
 * What a caller is told of a thrown error, on every adapter: its own refusal, or database_unavailable
 * when the database cannot be reached (the pool reconnects by itself). Null: a bug (a 500 over HTTP).
 */
export function publicErrorOf(error: unknown): PublicError | null {
  if (error instanceof PublicError) return error;
  if (isDatabaseUnavailable(error)) {
    return new PublicError("database_unavailable", "the database cannot be reached; try again shortly");
  }
  return null;
}
