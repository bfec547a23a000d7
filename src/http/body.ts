import type { Static, TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { invalidRequest } from "../engine/errors.ts";
import { TooLarge } from "../files/storage.ts";
import { PublicError } from "../lib/errors.ts";
import { nestsDeeperThan, tooDeepMessage } from "../lib/json-depth.ts";

export const MiB = 1024 * 1024;

/** The client stopped sending before the body's end (the connection closed): an ordinary 400, not a bug. */
export class BodyAborted extends PublicError {
  constructor() {
    super("invalid_request", "the body broke off before its end");
  }
}

const sizeText = (bytes: number) => (bytes < MiB ? `${bytes / 1024} KiB` : `${bytes / MiB} MiB`);

export const payloadTooLarge = (limit: number) => new TooLarge(limit, `the body is larger than ${sizeText(limit)}`);

/**
 * Reads a body as text, refusing it (413) as soon as it passes `limit` bytes: by Content-Length when
 * sent, otherwise while streaming, so a chunked body is never held beyond the limit.
 */
export async function readTextBody(request: Request, limit: number): Promise<string> {
  try {
    if (hasDeclaredLength(request, limit)) return await request.text();
    return new TextDecoder().decode(await chunksUpTo(request, limit));
  } catch (error) {
    throw abortedOr(error);
  }
}

/** As readTextBody, for a body passed on as it came (bytes, whatever their encoding). */
export async function readBytesBody(request: Request, limit: number): Promise<Uint8Array> {
  try {
    if (hasDeclaredLength(request, limit)) return new Uint8Array(await request.arrayBuffer());
    return await chunksUpTo(request, limit);
  } catch (error) {
    throw abortedOr(error);
  }
}

/** What a read throws when the client left mid-body (Bun aborts the request) becomes BodyAborted. */
const abortedOr = (error: unknown) =>
  error instanceof DOMException && error.name === "AbortError" ? new BodyAborted() : error;

/** Refuses a Content-Length over `limit`; answers whether one was sent (Bun then reads no more than it says). */
function hasDeclaredLength(request: Request, limit: number): boolean {
  const declared = request.headers.get("content-length");
  if (declared === null) return false;
  if (Number(declared) > limit) throw payloadTooLarge(limit);
  return true;
}

async function chunksUpTo(request: Request, limit: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request.body) {
    size += chunk.byteLength;
    if (size > limit) throw payloadTooLarge(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** A body (or part) nested deeper than MAX_JSON_DEPTH: refused before any code walks it. */
export const tooDeep = (where = "") =>
  new PublicError("invalid_request", tooDeepMessage, {
    details: { issues: [{ where, code: "too_deep", message: tooDeepMessage }] },
  });

/**
 * Parses a JSON body; a body that is not JSON is `invalid_request` with the issue at the root, and so
 * is one nested deeper than MAX_JSON_DEPTH.
 */
export async function readJsonBody(request: Request, limit: number): Promise<unknown> {
  const text = await readTextBody(request, limit);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw invalidRequest([{ where: "", code: "invalid_json", message: "the body is not valid JSON" }]);
  }
  if (nestsDeeperThan(body)) throw tooDeep();
  return body;
}

/** A parsed body checked against its schema: every problem is an issue naming its field (400 `invalid_request`). */
export function checkedBody<T extends TSchema>(schema: T, body: unknown): Static<T> {
  const errors = [...Value.Errors(schema, body)];
  if (errors.length > 0) {
    throw invalidRequest(
      errors.map((e) => ({ where: e.path, code: "invalid", message: `${e.path.slice(1) || "body"}: ${e.message}` })),
    );
  }
  return body as Static<T>;
}
