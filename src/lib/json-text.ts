/**
 * PostgreSQL cannot store U+0000 in jsonb, and SQLite can; to behave alike on both, inputs and outputs
 * holding it are refused. Returns the JSON pointer of the first string or key that holds it.
 */
export function findNulCharacter(value: unknown, pointer = ""): string | null {
  if (typeof value === "string") return value.includes("\u0000") ? pointer : null;
  if (value === null || typeof value !== "object") return null;
  for (const [key, child] of Object.entries(value)) {
    const childPointer = `${pointer}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`;
    if (key.includes("\u0000")) return childPointer;
    const found = findNulCharacter(child, childPointer);
    if (found !== null) return found;
  }
  return null;
}

/**
 * A returned value as it will be stored: JSON-normalised, `undefined` as null. When it cannot be
 * stored, the reason, to follow "the action's output" or "step x's result": "is not JSON: …" or
 * "holds U+0000 at <pointer>, …".
 */
export function storableJson(value: unknown, pointer: string): { value: unknown } | { problem: string } {
  let normalised: unknown;
  try {
    normalised = value === undefined ? null : JSON.parse(JSON.stringify(value));
  } catch (error) {
    return { problem: `is not JSON: ${(error as Error).message}` };
  }
  const nul = findNulCharacter(normalised, pointer);
  if (nul !== null) return { problem: `holds U+0000 at ${nul || "/"}, which cannot be stored` };
  return { value: normalised };
}
