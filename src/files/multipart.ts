import { getMultipartBoundary, MultipartPart } from "@remix-run/multipart-parser";

/** The body is not well-formed multipart; answered as 400 `invalid_request`. */
export class MalformedMultipart extends Error {
  override name = "MalformedMultipart";
}

/** What a part's headers say; the body is read with `MultipartReader.body()`. */
export interface PartHead {
  name: string | undefined;
  /** Present (possibly empty) for a file part. */
  filename: string | undefined;
  mediaType: string | undefined;
}

const MAX_HEADER_BYTES = 8 * 1024;
const HEADER_END = Buffer.from("\r\n\r\n");

/**
 * Reads a multipart body part by part, each part's bytes streamed as they arrive.
 *
 * @remix-run/multipart-parser 0.16 yields a part only once its whole content is in memory, so the
 * boundary scanning is done here; the library still decodes the part headers (Content-Disposition,
 * Content-Type). Memory holds one incoming chunk plus a boundary's length of carry-over.
 */
export class MultipartReader {
  private readonly reader: { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(): Promise<void> };
  private readonly delimiter: Buffer;
  // The preamble before the first boundary is read as a body nobody keeps: prefixing CRLF makes the
  // first boundary look like every later one.
  private buffer: Buffer = Buffer.from("\r\n");
  private state: "body" | "boundary" | "end" = "body";

  constructor(body: ReadableStream<Uint8Array>, boundary: string) {
    this.reader = body.getReader();
    this.delimiter = Buffer.from(`\r\n--${boundary}`);
  }

  /** A reader for a request whose content type is multipart with a boundary. */
  static of(request: Request): MultipartReader {
    const boundary = getMultipartBoundary(request.headers.get("content-type") ?? "");
    if (!boundary || !request.body) throw new MalformedMultipart("a multipart body with a boundary is required");
    return new MultipartReader(request.body, boundary);
  }

  /** The next part's headers, or null after the closing boundary. An unread body is skipped. */
  async next(): Promise<PartHead | null> {
    if (this.state === "body") for await (const _ of this.body());
    if (this.state === "end") return null;
    while (this.buffer.length < 2) await this.more();
    if (this.buffer[0] === 0x2d && this.buffer[1] === 0x2d) {
      this.state = "end";
      await this.reader.cancel().catch(() => {});
      return null;
    }
    // Headers run from the CRLF that ends the boundary line to the first empty line.
    let end = this.buffer.indexOf(HEADER_END);
    while (end === -1) {
      if (this.buffer.length > MAX_HEADER_BYTES) throw new MalformedMultipart("a part's headers are too long");
      await this.more();
      end = this.buffer.indexOf(HEADER_END);
    }
    if (!this.buffer.subarray(0, 2).equals(HEADER_END.subarray(0, 2)))
      throw new MalformedMultipart("a boundary must end its line");
    const part = new MultipartPart(this.buffer.subarray(2, end), []);
    this.buffer = this.buffer.subarray(end + HEADER_END.length);
    this.state = "body";
    try {
      return { name: part.name, filename: part.filename, mediaType: part.mediaType };
    } catch {
      throw new MalformedMultipart("a part's headers could not be read");
    }
  }

  /** The current part's bytes, as they arrive. */
  async *body(): AsyncGenerator<Uint8Array> {
    if (this.state !== "body") return;
    // A delimiter may straddle two chunks: hold back what could be its start.
    const keep = this.delimiter.length - 1;
    for (;;) {
      const at = this.buffer.indexOf(this.delimiter);
      if (at !== -1) {
        const content = this.buffer.subarray(0, at);
        this.buffer = this.buffer.subarray(at + this.delimiter.length);
        this.state = "boundary";
        if (content.length > 0) yield content;
        return;
      }
      if (this.buffer.length > keep) {
        const content = this.buffer.subarray(0, this.buffer.length - keep);
        this.buffer = this.buffer.subarray(this.buffer.length - keep);
        yield content;
      }
      await this.more();
    }
  }

  /** Stops reading the request body (after a refusal). */
  async cancel(): Promise<void> {
    this.state = "end";
    await this.reader.cancel().catch(() => {});
  }

  private async more(): Promise<void> {
    // A body that breaks off (the client went away) is as unreadable as a malformed one.
    const { value, done } = await this.reader.read().catch(() => {
      throw new MalformedMultipart("the body could not be read to its end");
    });
    if (done || !value) throw new MalformedMultipart("the multipart body ended before its closing boundary");
    const chunk = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
  }
}
