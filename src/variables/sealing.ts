/**
 * Secrets at rest: AES-256-GCM through WebCrypto, under the 32-byte key of SECRETS_KEY. A sealed value is
 * `v1.<keyId>.<iv>.<ciphertext>` (base64url); the key id is a fingerprint of the key, so a value says
 * which key opens it and a rotation finds those under an old one. The additional data is the variable's
 * name: a sealed value copied under another name does not open (docs/decisions/variables.md).
 */

const VERSION = "v1";
const IV_BYTES = 12;
const KEY_BYTES = 32;

/** A key that is not 32 bytes of base64 or hex, or a value that does not open; the message never holds a value. */
export class SealingError extends Error {
  override name = "SealingError";
}

export interface Sealer {
  /** The id of the key values are sealed under. */
  readonly keyId: string;
  /** Whether a value sealed under `keyId` opens here (the current key or a previous one). */
  opens(keyId: string | null): boolean;
  seal(name: string, plaintext: string): Promise<string>;
  /** Throws SealingError when no key here opens it, or it was altered or moved to another name. */
  open(name: string, sealed: string): Promise<string>;
}

/** A key's 32 bytes from base64 (or base64url) or hex; throws SealingError otherwise. */
export function parseKey(text: string, setting = "SECRETS_KEY"): Uint8Array {
  const trimmed = text.trim();
  let bytes: Uint8Array | null = null;
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) bytes = Buffer.from(trimmed, "hex");
  else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)) bytes = Buffer.from(trimmed, "base64");
  if (!bytes || bytes.length !== KEY_BYTES) {
    throw new SealingError(
      `${setting} must be 32 bytes as base64 (44 characters) or hex (64): generate one with \`openssl rand -base64 32\``,
    );
  }
  return new Uint8Array(bytes);
}

/** A new random key, as base64. */
export function generateKey(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(KEY_BYTES))).toString("base64");
}

/** The key's id: the first 12 hex digits of its SHA-256 (identifies it, reveals nothing usable). */
export function keyIdOf(key: Uint8Array): string {
  return new Bun.CryptoHasher("sha256").update(key).digest("hex").slice(0, 12);
}

/** The id of the key a sealed value names, null when it is not a sealed value. */
export function sealedKeyId(sealed: string): string | null {
  const parts = sealed.split(".");
  return parts.length === 4 && parts[0] === VERSION ? (parts[1] ?? null) : null;
}

const aad = (name: string) => new TextEncoder().encode(`actuate variable ${name}`);
const b64url = (bytes: ArrayBuffer | Uint8Array) => Buffer.from(bytes as ArrayBuffer).toString("base64url");

/** A sealer over `current` (what it seals with) that also opens values sealed under the `previous` keys. */
export async function createSealer(current: string, previous: readonly string[] = []): Promise<Sealer> {
  const keys = new Map<string, CryptoKey>();
  const importKey = (raw: Uint8Array) =>
    crypto.subtle.importKey("raw", raw as Uint8Array<ArrayBuffer>, { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
  const currentRaw = parseKey(current);
  const keyId = keyIdOf(currentRaw);
  keys.set(keyId, await importKey(currentRaw));
  for (const text of previous) {
    const raw = parseKey(text, "SECRETS_KEY_PREVIOUS");
    const id = keyIdOf(raw);
    if (!keys.has(id)) keys.set(id, await importKey(raw));
  }
  const sealingKey = keys.get(keyId) as CryptoKey;
  return {
    keyId,
    opens: (id) => id !== null && keys.has(id),
    async seal(name, plaintext) {
      const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
      const encrypted = await crypto.subtle.encrypt(
        { name: "AES-GCM", iv, additionalData: aad(name) },
        sealingKey,
        new TextEncoder().encode(plaintext),
      );
      return `${VERSION}.${keyId}.${b64url(iv)}.${b64url(encrypted)}`;
    },
    async open(name, sealed) {
      const [version, id, iv, body] = sealed.split(".");
      if (version !== VERSION || !id || !iv || !body) throw new SealingError(`${name} is not a sealed value`);
      const key = keys.get(id);
      if (!key) throw new SealingError(`${name} is sealed under key ${id}, which this server does not have`);
      try {
        const plain = await crypto.subtle.decrypt(
          { name: "AES-GCM", iv: Buffer.from(iv, "base64url"), additionalData: aad(name) },
          key,
          Buffer.from(body, "base64url"),
        );
        return new TextDecoder().decode(plain);
      } catch {
        throw new SealingError(`${name} does not open under key ${id}: altered, or sealed for another name`);
      }
    },
  };
}
