import type { BusboyFileStream, BusboyInstance } from "@fastify/busboy";
import { TooLarge } from "../files/storage.ts";
import type { Spool, SpooledFile } from "./spool.ts";

/** The body is not well-formed multipart; answered as 400 `invalid_request`. */
export class MalformedMultipart extends Error {
  override name = "MalformedMultipart";
}

/** A part the reader was not told to expect, or one sent twice; nothing of it is read. */
export class UnexpectedPart extends Error {
  override name = "UnexpectedPart";
  constructor(
    readonly part: string,
    readonly repeated: boolean,
  ) {
    super(repeated ? `the part ${JSON.stringify(part)} is sent twice` : `no part is named ${JSON.stringify(part)}`);
  }
}

export interface MultipartLimits {
  /** Parts read as text, even when sent with a filename (`curl -F name=@file`). */
  fields: readonly string[];
  /** Parts spooled as files. A part named neither here nor in `fields`, or sent twice, is UnexpectedPart. */
  files: readonly string[];
  /** A field larger than this is TooLarge. */
  maxFieldBytes: number;
  /** A file part larger than this is TooLarge. */
  maxFileBytes: number;
  /** A body larger than this, counted as it arrives, is TooLarge. */
  maxBodyBytes: number;
  /** More parts than this is MalformedMultipart. */
  maxParts: number;
}

export interface ReceivedFile extends SpooledFile {
  filename: string;
  mediaType: string;
}

export interface MultipartForm {
  fields: Map<string, string>;
  files: Map<string, ReceivedFile>;
}

/** Busboy keeps this much of a part's headers and drops the rest without saying so (the one limit it does not report). */
const MAX_HEADER_BYTES = 8 * 1024;

/**
 * Reads a multipart/form-data request with busboy as it streams: fields are kept as text, each file
 * part is written to `spool` (counted, hashed) before the next part is parsed. A part it was not told
 * to expect, or one sent twice, is refused at its headers (UnexpectedPart). Any limit busboy reports
 * is TooLarge or MalformedMultipart, never a truncated value; a body that is cut off or breaks off is
 * MalformedMultipart. When it throws, nothing is still writing to the spool.
 */
export async function readMultipart(request: Request, limits: MultipartLimits, spool: Spool): Promise<MultipartForm> {
  const fields = new Set(limits.fields);
  const files = new Set(limits.files);
  const seen = new Set<string>();
  // Busboy buffers a field whole before telling of it, so only the first part of an expected field is
  // read as one; every other part comes as a stream, refused (or spooled) when its headers arrive.
  const readAsField = (name: string | undefined) => {
    if (name === undefined || !fields.has(name) || seen.has(name)) return false;
    seen.add(name);
    return true;
  };
  const body = request.body;
  // Loaded on the first multipart request, not at start (a server most often sees none).
  const { Busboy } = await import("@fastify/busboy");
  let busboy: BusboyInstance;
  try {
    if (!body) throw new Error("the body is empty");
    busboy = Busboy({
      headers: { "content-type": request.headers.get("content-type") ?? "" },
      isPartAFile: (name) => !readAsField(name),
      limits: {
        fieldSize: limits.maxFieldBytes,
        fileSize: limits.maxFileBytes,
        parts: limits.maxParts,
        headerSize: MAX_HEADER_BYTES,
      },
    });
  } catch (error) {
    throw new MalformedMultipart(`a multipart body with a boundary is required (${(error as Error).message})`);
  }

  const form: MultipartForm = { fields: new Map(), files: new Map() };
  const reader = body.getReader();
  const open = new Set<BusboyFileStream>();
  const failed = Promise.withResolvers<void>();
  let failure: unknown;
  const fail = (error: unknown) => {
    failure ??= error;
    for (const stream of open) stream.destroy();
    busboy.destroy();
    // Settles a pending read too, so a client that stalls after a refusal holds nothing up.
    reader.cancel().catch(() => {});
    failed.resolve();
  };
  // File parts are written one after another; busboy pauses on a file stream nobody reads yet.
  let writes = Promise.resolve();

  busboy.on("field", (name, value, _nameTruncated, valueTruncated) => {
    if (valueTruncated) fail(new TooLarge(limits.maxFieldBytes));
    else form.fields.set(name, value);
  });
  busboy.on("file", (name, stream, filename, _encoding, mediaType) => {
    // A part cut off before its turn to be written errors with nobody reading it yet; the write sees it.
    stream.on("error", () => {});
    open.add(stream);
    if (!name) return fail(new MalformedMultipart("a part has no name"));
    if (seen.has(name) || !files.has(name)) return fail(new UnexpectedPart(name, seen.has(name)));
    seen.add(name);
    // Busboy would skip the rest of the part; stop reading the body at once instead.
    stream.once("limit", () => fail(new TooLarge(limits.maxFileBytes)));
    writes = writes.then(async () => {
      try {
        if (failure !== undefined) return;
        const file = await spool.write(partBytes(stream), limits.maxFileBytes);
        // Busboy's types say string, but a part sent without a filename has none.
        form.files.set(name, { ...file, filename: filename ?? "", mediaType });
      } catch (error) {
        fail(error);
      } finally {
        open.delete(stream);
      }
    });
  });
  busboy.on("partsLimit", () => fail(new MalformedMultipart(`at most ${limits.maxParts} parts`)));
  busboy.on("error", (error: Error) => fail(new MalformedMultipart(error.message)));
  const finished = new Promise<void>((resolve) => busboy.once("finish", resolve));

  let received = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (failure !== undefined) break;
      if (done) {
        busboy.end();
        break;
      }
      received += value.byteLength;
      if (received > limits.maxBodyBytes) {
        fail(new TooLarge(limits.maxBodyBytes, `the body is larger than ${limits.maxBodyBytes} bytes`));
        break;
      }
      if (!busboy.write(value)) {
        await Promise.race([new Promise((resolve) => busboy.once("drain", resolve)), failed.promise]);
      }
    }
  } catch {
    fail(new MalformedMultipart("the body could not be read to its end"));
  }
  await Promise.race([finished, failed.promise]);
  await writes;
  if (failure !== undefined) throw failure;
  return form;
}

/** A file part's bytes; the stream's own errors (cut off, stopped) are the body's fault, not the writer's. */
async function* partBytes(stream: BusboyFileStream): AsyncGenerator<Uint8Array> {
  try {
    yield* stream;
  } catch {
    throw new MalformedMultipart("a part ended before its boundary");
  }
}
