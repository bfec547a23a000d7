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

export const payloadTooLarge = (limit: number) => new TooLarge(limit, `the body is larger than ${limit / MiB} MiB`);

/**
 * Reads a body as text, refusing it (413) as soon as it passes `limit` bytes: by Content-Length when
 * sent, otherwise while streaming, so a chunked body is never held beyond the limit.
 */
export async function readTextBody(request: Request, limit: number): Promise<string> {
  try {
    return await readText(request, limit);
  } catch (error) {
    if (error instanceof DOMException && error.name === "AbortError") throw new BodyAborted();
    throw error;
  }
}

async function readText(request: Request, limit: number): Promise<string> {
  const declared = request.headers.get("content-length");
  if (declared !== null) {
    if (Number(declared) > limit) throw payloadTooLarge(limit);
    return request.text();
  }
  if (!request.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request.body) {
    size += chunk.byteLength;
    if (size > limit) throw payloadTooLarge(limit);
    chunks.push(chunk);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
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
