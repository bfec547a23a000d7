import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { InvalidPath } from "../../src/files/paths.ts";
import { type S3Settings, S3Storage } from "../../src/files/s3.ts";
import { TooLarge } from "../../src/files/storage.ts";
import { holdS3rver, releaseS3rver, S3_KEY } from "../support/storages.ts";
import { MiB } from "../support/streams.ts";

// The server-level rules run on S3 too: test/http/storage.test.ts and test/http/file-inputs.test.ts take every driver.
let endPoint: string;
beforeAll(async () => {
  endPoint = await holdS3rver();
});
afterAll(releaseS3rver);

const settings = (bucket: string): S3Settings => ({
  endPoint,
  region: "us-east-1",
  bucket,
  accessKey: S3_KEY,
  secretKey: S3_KEY,
  partSize: 5 * MiB,
});

/** A body streamed in `chunk`-sized pieces, so no Content-Length is known up front. */
function streamOf(bytes: Uint8Array, chunk = 64 * 1024): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.subarray(offset, offset + chunk));
      offset += chunk;
    },
  });
}

const sha256 = (bytes: Uint8Array | string) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
const randomBytes = (size: number) => {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i += 65_536) crypto.getRandomValues(bytes.subarray(i, i + 65_536));
  return bytes;
};

describe("S3Storage against s3rver", () => {
  let storage: S3Storage;
  const put = (path: string, bytes: Uint8Array, maxBytes = 64 * MiB) =>
    storage.put(path, streamOf(bytes), { contentType: "application/octet-stream", maxBytes });
  const read = async (path: string) => {
    const found = await storage.get(path);
    if (!found) return null;
    return { size: found.size, bytes: new Uint8Array(await new Response(found.body).arrayBuffer()) };
  };

  beforeAll(async () => {
    storage = await S3Storage.open(settings("actuate-unit"));
    await storage.init(); // a second init finds the bucket and keeps it
  });

  test("put, get and delete round trip with size and sha256", async () => {
    const bytes = new TextEncoder().encode("hello s3");
    expect(await put("docs/hello.txt", bytes)).toEqual({ size: 8, sha256: sha256(bytes) });
    const found = await read("docs/hello.txt");
    expect(found?.size).toBe(8);
    expect(new TextDecoder().decode(found?.bytes)).toBe("hello s3");
    await storage.delete("docs/hello.txt");
    expect(await storage.get("docs/hello.txt")).toBeNull();
    await storage.delete("docs/hello.txt"); // idempotent
  });

  test("an empty body is an empty object", async () => {
    expect(await put("empty", new Uint8Array(0))).toEqual({ size: 0, sha256: sha256("") });
    expect((await read("empty"))?.size).toBe(0);
  });

  test("a body larger than one part goes up in parts and comes back whole", async () => {
    const bytes = randomBytes(12 * MiB + 3);
    expect(await put("big/parts.bin", bytes)).toEqual({ size: bytes.byteLength, sha256: sha256(bytes) });
    const found = await read("big/parts.bin");
    expect(found?.size).toBe(bytes.byteLength);
    expect(sha256(found?.bytes ?? new Uint8Array())).toBe(sha256(bytes));
  });

  test("a body of declared length goes up as one PUT and comes back whole; declared over maxBytes is refused", async () => {
    const bytes = randomBytes(7 * MiB + 5);
    const options = { contentType: "image/png", maxBytes: 64 * MiB, size: bytes.byteLength };
    expect(await storage.put("whole.bin", streamOf(bytes), options)).toEqual({
      size: bytes.byteLength,
      sha256: sha256(bytes),
    });
    expect(sha256((await read("whole.bin"))?.bytes ?? new Uint8Array())).toBe(sha256(bytes));
    await expect(
      storage.put("declared-too-large", streamOf(bytes), { ...options, maxBytes: MiB }),
    ).rejects.toBeInstanceOf(TooLarge);
    expect(await storage.get("declared-too-large")).toBeNull();
  });

  test("past maxBytes the put throws TooLarge and leaves no object, whether or not parts were sent", async () => {
    for (const [path, size, limit] of [
      ["small-too-large", 2048, 1024],
      ["parts-too-large", 11 * MiB, 10 * MiB],
    ] as const) {
      await expect(put(path, new Uint8Array(size), limit)).rejects.toBeInstanceOf(TooLarge);
      expect(await storage.get(path)).toBeNull();
    }
  });

  test("a refused replacement keeps the object already there", async () => {
    await put("kept.txt", new TextEncoder().encode("old"));
    await expect(put("kept.txt", new Uint8Array(100), 10)).rejects.toBeInstanceOf(TooLarge);
    expect(new TextDecoder().decode((await read("kept.txt"))?.bytes)).toBe("old");
  });

  test("a path that could leave the bucket is refused", async () => {
    for (const path of ["../escape", "a/../../b", "/abs", "a//b"]) {
      await expect(put(path, new Uint8Array(1))).rejects.toBeInstanceOf(InvalidPath);
      await expect(storage.get(path)).rejects.toBeInstanceOf(InvalidPath);
      await expect(storage.delete(path)).rejects.toBeInstanceOf(InvalidPath);
    }
  });
});

describe("STORAGE=s3 configuration", () => {
  test("a missing S3 setting is a ConfigError naming it", () => {
    const load = () => loadConfig({ STORAGE: "s3", S3_ENDPOINT: "http://127.0.0.1:9000", S3_ACCESS_KEY: "k" });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/S3_BUCKET: required when STORAGE=s3[\s\S]*S3_SECRET_KEY/);
    expect(loadConfig({}).storage.driver).toBe("disk");
  });
});
