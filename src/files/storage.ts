import { PublicError } from "../lib/errors.ts";

/** Where file bytes live. File metadata (owner, type, size) is in the database, not here. */
export interface Storage {
  /** Streams `body` in, refusing it past `maxBytes` (nothing is kept then); answers its size and sha256. */
  put(path: string, body: ReadableStream<Uint8Array>, options: PutOptions): Promise<StoredObject>;
  /** The bytes, streamed; null when there is no such file. */
  get(path: string): Promise<StoredBytes | null>;
  delete(path: string): Promise<void>;
  /**
   * Makes `to` hold the bytes `from` holds now, replacing what `to` held, without sending them through
   * the server (a hard link on disk, CopyObject on S3); later writes to either leave the other as it is
   * (a disk write renames a new file into place). False when `from` holds nothing.
   */
  copy(from: string, to: string): Promise<boolean>;
  /** Throws unless the store can be reached now (for /readyz). */
  check(): Promise<void>;
  /**
   * Only for a store that serves presigned URLs itself (S3): a URL that PUTs / GETs `path` for
   * `expiresInSeconds` without a credential. A driver without them gets the server's own signed URLs.
   */
  signPut?(path: string, expiresInSeconds: number): Promise<string>;
  signGet?(path: string, expiresInSeconds: number): Promise<string>;
}

export interface PutOptions {
  contentType: string;
  maxBytes: number;
  /** The body's length, when the sender declared it (Content-Length, a spooled file). */
  size?: number;
}

export interface StoredBytes {
  body: ReadableStream<Uint8Array>;
  size: number;
  /** A local file: an HTTP response can send it as is (sendfile) instead of streaming `body` through JS. */
  file?: Blob;
}

export interface StoredObject {
  size: number;
  sha256: string;
}

/** The body was larger than allowed (`payload_too_large`); whatever was written of it is gone. */
export class TooLarge extends PublicError {
  override name = "TooLarge";
  constructor(
    readonly limit: number,
    message = `the file is larger than ${limit} bytes`,
  ) {
    super("payload_too_large", message, { details: { limitBytes: limit } });
  }
}

/**
 * Passes a body through while counting and hashing it, refusing it (TooLarge) once it passes
 * `maxBytes`. Drivers write what `chunks()` yields and answer `stored()` when it is done.
 */
export function metered(body: AsyncIterable<Uint8Array>, maxBytes: number) {
  const hash = new Bun.CryptoHasher("sha256");
  let size = 0;
  return {
    async *chunks(): AsyncGenerator<Uint8Array> {
      for await (const chunk of body) {
        size += chunk.byteLength;
        if (size > maxBytes) throw new TooLarge(maxBytes);
        hash.update(chunk);
        yield chunk;
      }
    },
    stored: (): StoredObject => ({ size, sha256: hash.digest("hex") }),
  };
}
