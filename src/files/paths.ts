import { PublicError } from "../lib/errors.ts";

/** A refused storage path: `invalid_path`. */
export class InvalidPath extends PublicError {
  override name = "InvalidPath";
  constructor(message: string) {
    super("invalid_path", message);
  }
}

const MAX_PATH_BYTES = 1024;

/**
 * Checks a caller's file path: relative, `/`-separated, no empty, `.` or `..` segment, no backslash
 * or control character, at most 1024 bytes. A path that passes cannot leave the storage root.
 */
export function checkPath(path: unknown): string {
  if (typeof path !== "string" || path.length === 0) throw new InvalidPath("a path is required");
  if (new TextEncoder().encode(path).length > MAX_PATH_BYTES) throw new InvalidPath("a path is at most 1024 bytes");
  if (path.startsWith("/")) throw new InvalidPath("a path is relative (no leading /)");
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
  if (/[\\\u0000-\u001f\u007f]/.test(path)) throw new InvalidPath("a path holds no backslash or control character");
  for (const segment of path.split("/")) {
    if (segment === "" || segment === "." || segment === "..") {
      throw new InvalidPath("a path has no empty, . or .. segment");
    }
  }
  return path;
}

/**
 * Checks a listing prefix: "" (every file), or the start of a path that checkPath would take: whole
 * segments, then optionally a `/` or the start of a next segment (`reports/2026-`).
 */
export function checkPrefix(prefix: string): string {
  if (prefix === "") return prefix;
  const body = prefix.endsWith("/") ? prefix.slice(0, -1) : prefix;
  checkPath(body === "" ? prefix : body);
  return prefix;
}
