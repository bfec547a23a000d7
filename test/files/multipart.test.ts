import { describe, expect, test } from "bun:test";
import { MalformedMultipart, MultipartReader } from "../../src/files/multipart.ts";

/** A body in pieces of `size` bytes, so boundaries and headers fall across chunk edges. */
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

async function readAll(bytes: Uint8Array, boundary: string, size: number) {
  const reader = new MultipartReader(chunked(bytes, size), boundary);
  const parts: { name?: string; filename?: string; mediaType?: string; body: string }[] = [];
  for (let head = await reader.next(); head; head = await reader.next()) {
    const body = Buffer.concat(await Array.fromAsync(reader.body())).toString("latin1");
    parts.push({ name: head.name, filename: head.filename, mediaType: head.mediaType, body });
  }
  return parts;
}

describe("MultipartReader", () => {
  test("reads what FormData sends, whatever the chunk size", async () => {
    const form = new FormData();
    form.set("request", JSON.stringify({ a: 1 }));
    // Content that looks like a delimiter's start must pass through untouched.
    form.set("file", new File(["line\r\n--not-the-boundary\r\n-\r"], "ünï cödé.bin", { type: "image/png" }));
    form.set("empty", new File([], "", { type: "text/plain" }));
    const message = new Response(form);
    const boundary = /boundary=(.+)$/.exec(message.headers.get("content-type") ?? "")?.[1] as string;
    const bytes = new Uint8Array(await message.arrayBuffer());
    for (const size of [1, 2, 3, 7, 64, 65_536]) {
      const parts = await readAll(bytes, boundary, size);
      expect(parts, `chunks of ${size}`).toEqual([
        { name: "request", filename: undefined, mediaType: undefined, body: '{"a":1}' },
        {
          name: "file",
          filename: "ünï cödé.bin",
          mediaType: "image/png",
          body: "line\r\n--not-the-boundary\r\n-\r",
        },
        { name: "empty", filename: "", mediaType: "text/plain", body: "" },
      ]);
    }
  });

  test("a part's unread body is skipped; a preamble is ignored", async () => {
    const text =
      "preamble\r\n--b\r\nContent-Disposition: form-data; name=x\r\n\r\nskipped\r\n--b\r\nContent-Disposition: form-data; name=y\r\n\r\nread\r\n--b--\r\n";
    const reader = new MultipartReader(chunked(new TextEncoder().encode(text), 5), "b");
    expect((await reader.next())?.name).toBe("x");
    expect((await reader.next())?.name).toBe("y");
    expect(Buffer.concat(await Array.fromAsync(reader.body())).toString()).toBe("read");
    expect(await reader.next()).toBeNull();
  });

  test("truncated, boundary-less, over-long headers or a body that breaks off are MalformedMultipart", async () => {
    const bodies = [
      "--b\r\nContent-Disposition: form-data; name=x\r\n\r\nno end",
      "no boundary anywhere",
      `--b\r\n${"X-Long: y\r\n".repeat(1_000)}`,
      "--bX\r\n\r\n",
    ];
    for (const text of bodies) {
      const read = readAll(new TextEncoder().encode(text), "b", 16);
      await expect(read).rejects.toBeInstanceOf(MalformedMultipart);
    }
    let pulls = 0;
    const broken = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulls++ > 0) return controller.error(new Error("connection reset"));
        controller.enqueue(new TextEncoder().encode("--b\r\nContent-Disposition: form-data; name=x\r\n\r\nsome"));
      },
    });
    const reader = new MultipartReader(broken, "b");
    expect((await reader.next())?.name).toBe("x");
    await expect(Array.fromAsync(reader.body())).rejects.toBeInstanceOf(MalformedMultipart);
  });
});
