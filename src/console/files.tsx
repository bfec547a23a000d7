/** @jsxImportSource preact */

import { useState } from "preact/hooks";
import type { ActuateClient } from "../client/index.ts";
import { Alert, LoadFailure, type Outcome, OutcomeLine } from "./alert.tsx";
import { hrefOf } from "./route.ts";
import { ScrollBox } from "./scroll-box.tsx";
import { EmptyState, LoadingState, When } from "./ui.tsx";
import { download, sizeText } from "./uploads.tsx";
import { usePoll } from "./use-poll.ts";

const never = () => false;
const PAGE = 50;

/** The caller's files (a service key's: everyone's), a page at a time; upload, download, delete. */
export function FilesPage(props: { client: ActuateClient; prefix?: string }) {
  const { client } = props;
  // The prefix lives in the hash: a link shows the same files, back and forward go through them.
  const prefix = props.prefix ?? "";
  const setPrefix = (next: string) => {
    location.hash = hrefOf({ page: "files", prefix: next || undefined });
  };
  // The cursors of the pages before this one, to go back.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [revision, setRevision] = useState(0);
  const [message, setMessage] = useState<Outcome>(null);
  const cursor = cursors[cursors.length - 1];
  const page = usePoll(
    () => client.files.list({ prefix: prefix || undefined, cursor, limit: PAGE }),
    [client, prefix, cursor, revision],
    0,
    never,
  );
  const reload = () => setRevision((r) => r + 1);
  const act = async (what: () => Promise<unknown>, done?: string) => {
    setMessage(null);
    try {
      await what();
      if (done) setMessage({ text: done, error: false });
    } catch (error) {
      setMessage({ text: (error as Error).message, error: true });
    }
  };
  const remove = (path: string) => {
    if (!confirm(`Delete ${path}?`)) return;
    act(() => client.files.delete(path), `${path} deleted`).then(reload);
  };
  return (
    <main>
      <h1>Files</h1>
      <Upload
        client={client}
        onUploaded={(path) => {
          setMessage({ text: `${path} uploaded`, error: false });
          reload();
        }}
      />
      <h2>Stored files</h2>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter files">
        <label for="files-prefix">Path starts with</label>
        <input
          id="files-prefix"
          type="text"
          defaultValue={prefix}
          key={prefix}
          onChange={(e) => {
            setPrefix(e.currentTarget.value.trim());
            setCursors([undefined]);
          }}
        />
      </form>
      <OutcomeLine outcome={message} />
      <LoadFailure loaded={page} />
      <ScrollBox label="Files, scrolled">
        <table aria-label="Files">
          <thead>
            <tr>
              <th scope="col">Path</th>
              <th scope="col">Type</th>
              <th scope="col" class="num">
                Size
              </th>
              <th scope="col">Owner</th>
              <th scope="col">Updated</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {page.data?.items.map((file) => (
              <tr key={file.path}>
                <td>{file.path}</td>
                <td>{file.contentType}</td>
                <td class="num">{sizeText(file.size)}</td>
                <td>
                  {file.owner.kind}:{file.owner.id}
                </td>
                <td>
                  <When at={file.updatedAt} />
                </td>
                <td class="actions">
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Download ${file.path}`}
                    onClick={() => act(() => download(client, file.path))}
                  >
                    Download
                  </button>{" "}
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Delete ${file.path}`}
                    onClick={() => remove(file.path)}
                  >
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollBox>
      {!page.data && !page.error && <LoadingState what="files" />}
      {page.data?.items.length === 0 && (
        <EmptyState title={`No files${prefix ? ` under ${prefix}` : ""}.`}>Upload one below.</EmptyState>
      )}
      <p>
        {cursors.length > 1 && (
          <button type="button" class="secondary" onClick={() => setCursors((c) => c.slice(0, -1))}>
            Previous page
          </button>
        )}{" "}
        {page.data?.nextCursor && (
          <button
            type="button"
            class="secondary"
            onClick={() => setCursors((c) => [...c, page.data?.nextCursor ?? undefined])}
          >
            Next page
          </button>
        )}
      </p>
    </main>
  );
}

function Upload(props: { client: ActuateClient; onUploaded: (path: string) => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [path, setPath] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    if (!file) return;
    setBusy(true);
    setError(null);
    const target = path.trim() || file.name;
    try {
      await props.client.files.upload(target, file);
      form.reset();
      setFile(null);
      setPath("");
      props.onUploaded(target);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={submit} aria-label="Upload a file">
      <h2>Upload</h2>
      <label for="upload-file">File</label>
      <input
        id="upload-file"
        type="file"
        required
        onChange={(e) => {
          const chosen = e.currentTarget.files?.[0] ?? null;
          setFile(chosen);
          if (chosen && path === "") setPath(chosen.name);
        }}
      />
      <label for="upload-path">Path</label>
      <input
        id="upload-path"
        type="text"
        placeholder="reports/2026/summary.pdf"
        value={path}
        onInput={(e) => setPath(e.currentTarget.value)}
      />
      <p class="hint">
        The server signs an upload URL; the bytes go straight to the storage. Empty path: the file's name.
      </p>
      <Alert message={error} />
      <p>
        <button type="submit" disabled={busy || !file}>
          Upload
        </button>
      </p>
    </form>
  );
}
