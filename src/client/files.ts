import type { Page, StoredFile } from "../wire/views.ts";
import { ActuateError } from "./errors.ts";
import { request, retried, searchOf, type Transport } from "./http.ts";

/** `client.files`: the caller's stored files. */
export const filesResource = (transport: Transport) => ({
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
  list: (filter: { prefix?: string; limit?: number; cursor?: string } = {}) =>
    retried<Page<StoredFile>>(transport, "GET", `/storage/files${searchOf(filter)}`),
  delete: (path: string) =>
    retried<{ ok: true }>(transport, "DELETE", `/storage/files?filename=${encodeURIComponent(path)}`).then(
      () => undefined,
    ),
  downloadUrl: (path: string) =>
    retried<{ url: string }>(
      transport,
      "GET",
      `/storage/signed-download-url?filename=${encodeURIComponent(path)}`,
    ).then((body) => body.url),
});
