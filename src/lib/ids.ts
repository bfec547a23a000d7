const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * `value` lower-cased when it is a UUID (execution, run and request ids are compared lower-cased),
 * else null: anything else cannot name one, so it never reaches the store.
 */
export function uuidOrNull(value: unknown): string | null {
  if (typeof value !== "string") return null;
  const lower = value.toLowerCase();
  return UUID.test(lower) ? lower : null;
}
