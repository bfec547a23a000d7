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

/** RFC 9562 UUIDv5 (SHA-1 of a namespace UUID and a name): the same name always gives the same id. */
export function uuidV5(namespace: string, name: string): string {
  const hasher = new Bun.CryptoHasher("sha1");
  hasher.update(Buffer.from(namespace.replaceAll("-", ""), "hex"));
  hasher.update(name);
  const bytes = hasher.digest().subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x50;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
