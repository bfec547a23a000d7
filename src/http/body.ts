import { invalidRequest } from "../engine/errors.ts";
import { TooLarge } from "../files/storage.ts";

export const MiB = 1024 * 1024;

export const payloadTooLarge = (limit: number) => new TooLarge(limit, `the body is larger than ${limit / MiB} MiB`);

/**
 * Reads a body as text, refusing it (413) as soon as it passes `limit` bytes: by Content-Length when
 * sent, otherwise while streaming, so a chunked body is never held beyond the limit.
 */
export async function readTextBody(request: Request, limit: number): Promise<string> {
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

/** Parses a JSON body; a body that is not JSON is `invalid_request` with the issue at the root. */
export async function readJsonBody(request: Request, limit: number): Promise<unknown> {
  const text = await readTextBody(request, limit);
  try {
    return JSON.parse(text);
  } catch {
    throw invalidRequest([{ where: "", code: "invalid_json", message: "the body is not valid JSON" }]);
  }
}
