import { PublicError } from "../lib/errors.ts";

/** What a variable may be called: an environment variable's usual spelling. */
export const VARIABLE_NAME = /^[A-Z_][A-Z0-9_]{0,127}$/;
/** A value's largest size, in UTF-8 bytes. */
export const MAX_VALUE_BYTES = 64 * 1024;
/** A secret shorter than this is refused: redaction replaces every occurrence, and a short one is everywhere. */
export const MIN_SECRET_LENGTH = 8;

const invalid = (message: string, name: string) => new PublicError("invalid_variable", message, { name });

/** Throws invalid_variable for a name that is not `^[A-Z_][A-Z0-9_]{0,127}$`. */
export function checkVariableName(name: unknown): string {
  if (typeof name !== "string" || !VARIABLE_NAME.test(name)) {
    const shown = typeof name === "string" ? JSON.stringify(name.slice(0, 140)) : String(name);
    throw invalid(
      `${shown} is not a variable name: use capital letters, digits and _ (not first a digit), at most 128`,
      String(name),
    );
  }
  return name;
}

/**
 * Throws invalid_variable for a value that is not a string, is larger than 64 KiB, or is a secret shorter
 * than 8 characters. The message never holds the value.
 */
export function checkVariableValue(name: string, value: unknown, secret: boolean): string {
  if (typeof value !== "string") throw invalid(`${name}'s value must be a string`, name);
  if (Buffer.byteLength(value) > MAX_VALUE_BYTES) {
    throw invalid(`${name}'s value is larger than ${MAX_VALUE_BYTES / 1024} KiB`, name);
  }
  if (secret && value.length < MIN_SECRET_LENGTH) {
    throw invalid(`a secret must be at least ${MIN_SECRET_LENGTH} characters long (${name} is shorter)`, name);
  }
  return value;
}
