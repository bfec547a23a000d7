/** @jsxImportSource preact */
import type { ActuateClient, Upload } from "../client/index.ts";

export const sizeText = (size: number | null) =>
  size === null
    ? "not yet known"
    : size < 1024
      ? `${size} B`
      : size < 1024 ** 2
        ? `${(size / 1024).toFixed(1)} KiB`
        : `${(size / 1024 ** 2).toFixed(1)} MiB`;

/** Through a signed URL, as any client downloads: the browser fetches it without the credential. */
export async function download(client: ActuateClient, path: string) {
  const link = document.createElement("a");
  link.href = await client.files.downloadUrl(path);
  link.download = path.split("/").pop() ?? path;
  link.click();
}

/** The files an execution was invoked with. */
export function Uploads(props: { client: ActuateClient; uploads: Upload[] }) {
  return (
    <>
      <h3>Uploads</h3>
      <ul aria-label="Uploads">
        {props.uploads.map((u) => (
          <li key={u.path}>
            <code>{u.field}</code>: {u.filename} ({u.contentType}, {sizeText(u.size)}){" "}
            <button
              type="button"
              class="secondary"
              aria-label={`Download ${u.filename}`}
              onClick={() => download(props.client, u.path)}
            >
              Download
            </button>
          </li>
        ))}
      </ul>
    </>
  );
}
