import type { Page, StoredFile } from "../wire/views.ts";
import { ActuateError } from "./errors.ts";
import { answered, request, retried, searchOf, type Transport } from "./http.ts";

type Signal = { signal?: AbortSignal | undefined };

/** `client.files`: the caller's stored files. */
export const filesResource = (transport: Transport) => {
  const downloadUrl = (path: string, o: Signal = {}) =>
    retried<{ url: string }>(
      transport,
      "GET",
      `/storage/signed-download-url?filename=${encodeURIComponent(path)}`,
      undefined,
      o.signal,
    ).then((body) => body.url);
  /** The storage's answer through a signed download URL (a GET: safe to ask again). */
  const fetched = async (path: string, o: Signal) => {
    const url = await downloadUrl(path, o);
    return answered(transport, () => transport.fetch(url, { signal: o.signal ?? null }), {
      retry: true,
      signal: o.signal,
    });
  };
  return {
    /** Uploads through a signed URL: the bytes go to the storage directly (the server signs, then is out of the way). */
    async upload(path: string, data: Blob, uploadOptions: { contentType?: string } = {}) {
      const contentType = uploadOptions.contentType ?? (data.type || "application/octet-stream");
      const { body } = await request<{ url: string; method?: string; headers?: Record<string, string> }>(
        transport,
        "POST",
        "/storage/signed-upload-url",
        { body: { path, contentType } },
      );
      const put = await transport.fetch(body.url, {
        method: body.method ?? "PUT",
        headers: body.headers ?? { "content-type": contentType },
        body: data,
      });
      if (!put.ok) throw new ActuateError("upload_failed", `the storage answered ${put.status}`, put.status);
      return put.json().catch(() => ({}));
    },
    /** The caller's files (every owner's for a service key) in path order, a page at a time. */
    list: (filter: { prefix?: string; limit?: number; cursor?: string } = {}, o: Signal = {}) =>
      retried<Page<StoredFile>>(transport, "GET", `/storage/files${searchOf(filter)}`, undefined, o.signal),
    delete: (path: string) =>
      retried<{ ok: true }>(transport, "DELETE", `/storage/files?filename=${encodeURIComponent(path)}`).then(
        () => undefined,
      ),
    downloadUrl,
    /** The file's bytes, typed with its content type; a missing file is an ActuateError (`file_not_found`). */
    download: async (path: string, o: Signal = {}): Promise<Blob> => (await fetched(path, o)).blob(),
    /** The file's bytes as they arrive, for a file too large to hold at once. */
    stream: async (path: string, o: Signal = {}): Promise<ReadableStream<Uint8Array>> =>
      (await fetched(path, o)).body as ReadableStream<Uint8Array>,
  };
};
