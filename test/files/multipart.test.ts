import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TooLarge } from "../../src/files/storage.ts";
import { MalformedMultipart, type MultipartLimits, readMultipart, UnexpectedPart } from "../../src/http/multipart.ts";
import { Spool } from "../../src/http/spool.ts";
import { filledStream, MiB, multipartStream } from "../support/streams.ts";

const root = mkdtempSync(join(tmpdir(), "actuate-multipart-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const limits: MultipartLimits = {
  fields: ["request"],
  files: ["file", "empty", "small", "big", "f", "one", "two"],
  maxFieldBytes: 1024,
  maxFileBytes: 2 * MiB,
  maxBodyBytes: 16 * MiB,
  maxParts: 5,
};
const sha256 = (data: string | Uint8Array) => new Bun.CryptoHasher("sha256").update(data).digest("hex");

/** `stream` passed through, counting in `pulled.bytes` what the reader took of it. */
function counting(stream: ReadableStream<Uint8Array>) {
  const pulled = { bytes: 0 };
  const counted = stream.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        pulled.bytes += chunk.byteLength;
        controller.enqueue(chunk);
      },
    }),
  );
  return { counted, pulled };
}

/** `bytes` in pieces of `size` bytes, so boundaries and headers fall across chunk edges. */
function chunked(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + size));
      offset += size;
    },
  });
}

const post = (body: ReadableStream<Uint8Array> | string, contentType: string) =>
  new Request("http://actuate.test/", { method: "POST", headers: { "content-type": contentType }, body });

/** A FormData body as a browser or fetch sends it. */
async function encoded(form: FormData) {
  const message = new Response(form);
  // Bun forgets the header once the body is read.
  const contentType = message.headers.get("content-type") as string;
  return { bytes: new Uint8Array(await message.arrayBuffer()), contentType };
}

/** A fresh spool in its own folder, and what that folder holds. */
function newSpool() {
  const dir = mkdtempSync(join(root, "spool-"));
  const files = () => readdirSync(dir);
  /** Bytes on disk so far, the file being written included. */
  const written = () =>
    files().reduce((sum, name) => sum + (statSync(join(dir, name), { throwIfNoEntry: false })?.size ?? 0), 0);
  return { spool: new Spool(dir), files, written };
}

describe("readMultipart", () => {
  test("fields are text, file parts are spooled whole with size and sha256, whatever the chunk size", async () => {
    const form = new FormData();
    form.set("request", JSON.stringify({ a: "ü" }));
    // Content that looks like a delimiter's start must pass through untouched.
    const content = "line\r\n--not-the-boundary\r\n-\r";
    form.set("file", new File([content], "ünï cödé.bin", { type: "image/png" }));
    form.set("empty", new File([], "nothing.txt", { type: "text/plain" }));
    const { bytes, contentType } = await encoded(form);
    for (const size of [1, 3, 64, 65_536]) {
      const { spool, files } = newSpool();
      const read = await readMultipart(post(chunked(bytes, size), contentType), limits, spool);
      expect(Object.fromEntries(read.fields), `chunks of ${size}`).toEqual({ request: '{"a":"ü"}' });
      const file = read.files.get("file");
      expect(file).toMatchObject({ filename: "ünï cödé.bin", mediaType: "image/png", size: content.length });
      expect(file?.sha256).toBe(sha256(content));
      expect(await new Response(file?.stream()).text()).toBe(content);
      expect(read.files.get("empty")).toMatchObject({ filename: "nothing.txt", size: 0, sha256: sha256("") });
      expect(files()).toHaveLength(2);
      await spool.dispose();
      expect(files()).toEqual([]);
    }
  });

  test("a part named in `fields` is text even when sent with a filename (curl -F request=@file)", async () => {
    const { bytes, contentType } = await encoded(
      (() => {
        const form = new FormData();
        form.set("request", new File(['{"b":2}'], "request.json", { type: "application/json" }));
        return form;
      })(),
    );
    const { spool, files } = newSpool();
    const read = await readMultipart(post(chunked(bytes, 7), contentType), limits, spool);
    expect(read.fields.get("request")).toBe('{"b":2}');
    expect(read.files.size).toBe(0);
    expect(files()).toEqual([]);
  });

  test("a file part over maxFileBytes is TooLarge at once and nothing of it is kept", async () => {
    const { spool, files } = newSpool();
    let pulled = 0;
    const big = filledStream(64);
    const counted = big.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          pulled += chunk.byteLength;
          controller.enqueue(chunk);
        },
      }),
    );
    const multipart = multipartStream([
      { name: "small", filename: "s.bin", body: "kept until refused" },
      { name: "big", filename: "b.bin", body: counted },
    ]);
    const read = readMultipart(post(multipart.body, multipart.contentType), limits, spool);
    await expect(read).rejects.toBeInstanceOf(TooLarge);
    // Refused at the limit: the rest of the 64 MiB is never read.
    expect(pulled).toBeLessThan(8 * MiB);
    // The small file was spooled (dispose removes it); no trace of the big one.
    expect(files()).toHaveLength(1);
    await spool.dispose();
    expect(files()).toEqual([]);
  });

  test("a refusal does not wait for a client that stalls after the limit", async () => {
    const { spool, files } = newSpool();
    let sent = 0;
    const stalled = new ReadableStream<Uint8Array>({
      pull: (controller) => (sent++ < 3 ? controller.enqueue(new Uint8Array(MiB)) : new Promise(() => {})),
    });
    const multipart = multipartStream([{ name: "f", filename: "f.bin", body: stalled }]);
    const read = readMultipart(post(multipart.body, multipart.contentType), limits, spool);
    await expect(read).rejects.toBeInstanceOf(TooLarge);
    expect(files()).toEqual([]);
  });

  test("a file part is read only as fast as it is written: the body is not buffered ahead", async () => {
    const { spool, written } = newSpool();
    let pulled = 0;
    let ahead = 0;
    const counted = filledStream(48).pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          ahead = Math.max(ahead, pulled - written());
          pulled += chunk.byteLength;
          controller.enqueue(chunk);
        },
      }),
    );
    const multipart = multipartStream([
      { name: "one", filename: "1.bin", body: counted },
      { name: "two", filename: "2.bin", body: "after the big one" },
    ]);
    const read = await readMultipart(
      post(multipart.body, multipart.contentType),
      { ...limits, maxFileBytes: 64 * MiB, maxBodyBytes: 64 * MiB },
      spool,
    );
    expect(read.files.get("one")?.size).toBe(48 * MiB);
    expect(read.files.get("two")?.size).toBe(17);
    expect(ahead).toBeLessThan(8 * MiB);
    await spool.dispose();
  });

  test("a file of exactly maxFileBytes is taken whole", async () => {
    const { spool } = newSpool();
    const multipart = multipartStream([{ name: "f", filename: "f.bin", body: filledStream(2) }]);
    const read = await readMultipart(post(multipart.body, multipart.contentType), limits, spool);
    expect(read.files.get("f")?.size).toBe(2 * MiB);
    await spool.dispose();
  });

  test("a field over maxFieldBytes is TooLarge, never truncated", async () => {
    const { spool } = newSpool();
    const multipart = multipartStream([{ name: "request", body: "x".repeat(1025) }]);
    await expect(readMultipart(post(multipart.body, multipart.contentType), limits, spool)).rejects.toBeInstanceOf(
      TooLarge,
    );
    const atLimit = multipartStream([{ name: "request", body: "x".repeat(1024) }]);
    const read = await readMultipart(post(atLimit.body, atLimit.contentType), limits, spool);
    expect(read.fields.get("request")).toHaveLength(1024);
  });

  test("more than maxParts parts is MalformedMultipart; nothing stays spooled once disposed", async () => {
    const { spool, files } = newSpool();
    const parts = Array.from({ length: 6 }, (_, i) => ({ name: `f${i}`, filename: `${i}.bin`, body: "x" }));
    const multipart = multipartStream(parts);
    const read = readMultipart(
      post(multipart.body, multipart.contentType),
      { ...limits, files: parts.map((part) => part.name) },
      spool,
    );
    await expect(read).rejects.toBeInstanceOf(MalformedMultipart);
    await spool.dispose();
    expect(files()).toEqual([]);
  });

  test("a part not expected is refused at its headers, field or file: UnexpectedPart naming it, its bytes unread", async () => {
    for (const filename of [undefined, "x.bin"]) {
      const { spool, files } = newSpool();
      const { counted, pulled } = counting(filledStream(64));
      const multipart = multipartStream([
        { name: "request", body: "{}" },
        { name: "small", filename: "s.bin", body: "kept until refused" },
        { name: "stranger", filename, body: counted },
      ]);
      const read = readMultipart(post(multipart.body, multipart.contentType), limits, spool);
      await expect(read).rejects.toMatchObject(new UnexpectedPart("stranger", false));
      expect(pulled.bytes, `filename ${filename}`).toBeLessThan(8 * MiB);
      await spool.dispose();
      expect(files()).toEqual([]);
    }
  });

  test("a part sent twice is UnexpectedPart at its second headers, a field's as a file's", async () => {
    for (const name of ["request", "file"]) {
      const { spool, files } = newSpool();
      const { counted, pulled } = counting(filledStream(64));
      const multipart = multipartStream([
        { name, filename: name === "file" ? "1.bin" : undefined, body: "first" },
        { name, filename: name === "file" ? "2.bin" : undefined, body: counted },
      ]);
      const read = readMultipart(post(multipart.body, multipart.contentType), limits, spool);
      await expect(read).rejects.toMatchObject(new UnexpectedPart(name, true));
      expect(pulled.bytes, name).toBeLessThan(8 * MiB);
      await spool.dispose();
      expect(files()).toEqual([]);
    }
  });

  test("a body over maxBodyBytes is TooLarge as it arrives, though each part is within its limit", async () => {
    const { spool, files } = newSpool();
    const { counted, pulled } = counting(filledStream(2));
    const multipart = multipartStream([
      { name: "one", filename: "1.bin", body: filledStream(2) },
      { name: "two", filename: "2.bin", body: counted },
    ]);
    const read = readMultipart(
      post(multipart.body, multipart.contentType),
      { ...limits, maxBodyBytes: 3 * MiB },
      spool,
    );
    await expect(read).rejects.toMatchObject({ limit: 3 * MiB });
    await expect(read).rejects.toBeInstanceOf(TooLarge);
    expect(pulled.bytes).toBeLessThan(2 * MiB);
    await spool.dispose();
    expect(files()).toEqual([]);
  });

  test("no boundary, not multipart, cut off, over-long unfinished headers: MalformedMultipart, nothing kept", async () => {
    const form = new FormData();
    form.set("request", "{}");
    form.set("file", new File(["some bytes of a file"], "f.bin"));
    const { bytes, contentType } = await encoded(form);
    const boundary = /boundary=(.+)$/.exec(contentType)?.[1] as string;
    const cases: [ReadableStream<Uint8Array> | string, string][] = [
      [chunked(bytes, 16), "multipart/form-data"],
      [chunked(bytes, 16), "text/plain"],
      [chunked(bytes.subarray(0, bytes.length - 30), 16), contentType], // inside the file part
      [chunked(bytes.subarray(0, bytes.length - 4), 16), contentType], // before the closing boundary ends
      ["not multipart at all", contentType],
      ["", contentType],
      [`--${boundary}\r\n${"X-Long: y\r\n".repeat(2_000)}`, contentType],
      [`--${boundary}\r\nContent-Disposition: form-data; filename="no-name.bin"\r\n\r\ncut`, contentType],
    ];
    for (const [body, type] of cases) {
      const { spool, files } = newSpool();
      await expect(readMultipart(post(body, type), limits, spool)).rejects.toBeInstanceOf(MalformedMultipart);
      expect(files()).toEqual([]);
    }
  });

  test("a body that breaks off mid-file (the client went away) is MalformedMultipart; nothing kept", async () => {
    const { spool, files } = newSpool();
    const encoder = new TextEncoder();
    let pulls = 0;
    const broken = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulls++ === 0) {
          controller.enqueue(
            encoder.encode('--b\r\nContent-Disposition: form-data; name="f"; filename="f.bin"\r\n\r\n'),
          );
        } else if (pulls < 20) controller.enqueue(new Uint8Array(64 * 1024));
        else controller.error(new Error("connection reset"));
      },
    });
    const read = readMultipart(post(broken, "multipart/form-data; boundary=b"), limits, spool);
    await expect(read).rejects.toBeInstanceOf(MalformedMultipart);
    expect(files()).toEqual([]);
  });
});
