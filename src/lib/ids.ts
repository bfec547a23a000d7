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

/** The largest time a UUIDv7 can carry (48 bits of milliseconds). */
export const UUIDV7_MAX_MS = 2 ** 48 - 1;

/**
 * The lowest UUIDv7 of the millisecond `ms`: every id made at or after `ms` is at least this one, and
 * every id made before it is less, in the order both databases compare ids.
 */
export function uuidV7Floor(ms: number): string {
  const hex = Math.min(Math.max(0, Math.floor(ms)), UUIDV7_MAX_MS)
    .toString(16)
    .padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/** The millisecond a UUIDv7 was made at (its first 48 bits). */
export const uuidV7Millis = (id: string): number => Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);

/**
 * `bytes` random bytes (the platform's CSPRNG), base64url: secrets, keys and generated passwords. Web
 * Crypto rather than node:crypto, whose import loads Node's streams at start (~2 MiB, issue 14).
 */
export const randomBase64url = (bytes: number): string =>
  Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("base64url");
