/** What `findUnsupportedCharacter` refuses, as messages name it. */
export const UNSUPPORTED_CHARACTERS = "U+0000 or a lone surrogate";

/** PostgreSQL's jsonb and text hold neither U+0000 nor a lone UTF-16 surrogate (it is not UTF-8). */
const unsupported = (text: string) => text.includes("\u0000") || !text.isWellFormed();

/**
 * PostgreSQL cannot store U+0000 or a lone surrogate, and SQLite can; to behave alike on both, inputs,
 * outputs and query values holding one are refused. Returns the JSON pointer of the first string or key
 * that holds one.
 */
export function findUnsupportedCharacter(value: unknown, pointer = ""): string | null {
  const path = unsupportedPath(value);
  return path === null
    ? null
    : pointer + path.map((key) => `/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`).join("");
}

/** The keys down to the first string or key holding one, innermost last; the pointer is built only then. */
function unsupportedPath(value: unknown): string[] | null {
  if (typeof value === "string") return unsupported(value) ? [] : null;
  if (value === null || typeof value !== "object") return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unsupportedPath(value[i]);
      if (found !== null) return [String(i), ...found];
    }
    return null;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (unsupported(key)) return [key];
    const found = unsupportedPath((value as Record<string, unknown>)[key]);
    if (found !== null) return [key, ...found];
  }
  return null;
}

/**
 * A returned value as it will be stored: JSON-normalised, `undefined` as null. When it cannot be
 * stored, the reason, to follow "the action's output" or "step x's result": "is not JSON: …",
 * "is larger than <maxBytes> bytes as JSON, …" or "holds U+0000 or a lone surrogate at <pointer>, …".
 */
export function storableJson(
  value: unknown,
  pointer: string,
  maxBytes = Number.POSITIVE_INFINITY,
  /** What the bound is, after "is larger than <maxBytes> bytes as JSON, ". */
  bound = "the most an output may hold",
): { value: unknown } | { problem: string } {
  let normalised: unknown;
  try {
    const text = value === undefined ? "null" : JSON.stringify(value);
    if (text !== undefined && utf8Over(text, maxBytes)) {
      return { problem: `is larger than ${maxBytes} bytes as JSON, ${bound}` };
    }
    normalised = JSON.parse(text);
  } catch (error) {
    return { problem: `is not JSON: ${(error as Error).message}` };
  }
  const found = findUnsupportedCharacter(normalised, pointer);
  if (found !== null) return { problem: `holds ${UNSUPPORTED_CHARACTERS} at ${found || "/"}, which cannot be stored` };
  return { value: normalised };
}

/** Whether a text takes more than `maxBytes` in UTF-8: at least one byte and at most three per UTF-16 unit. */
const utf8Over = (text: string, maxBytes: number) =>
  text.length > maxBytes || (text.length * 3 > maxBytes && Buffer.byteLength(text) > maxBytes);
