/** @jsxImportSource preact */

import { useState } from "preact/hooks";
import type { ActuateClient } from "../client/index.ts";
import { LoadFailure } from "./alert.tsx";
import { ReleaseDiffView } from "./release-diff.tsx";
import { LoadingState, When } from "./ui.tsx";
import { usePoll } from "./use-poll.ts";

export function ReleasesPage(props: { client: ActuateClient }) {
  const [revision, setRevision] = useState(0);
  const [message, setMessage] = useState<{ text: string; error: boolean } | null>(null);
  const releases = usePoll(
    () => props.client.releases.list({ limit: 100 }),
    [props.client, revision],
    0,
    () => false,
  );
  const activate = async (version: string) => {
    if (!confirm(`Activate ${version}? Every server switches to it; executions in flight finish on their release.`))
      return;
    setMessage(null);
    try {
      await props.client.releases.activate(version);
      setMessage({ text: `${version} is active`, error: false });
    } catch (error) {
      setMessage({ text: (error as Error).message, error: true });
    }
    setRevision((r) => r + 1);
  };
  return (
    <main>
      <h1>Releases</h1>
      <LoadFailure loaded={releases} />
      {!releases.data && !releases.error && <LoadingState what="releases" />}
      {message && (
        <p role="status" class={message.error ? "error" : undefined}>
          {message.text}
        </p>
      )}
      {releases.data && (
        <table aria-label="Releases">
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">Published</th>
              <th scope="col">By</th>
              <th scope="col">Bundle</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {releases.data.items.map((r) => (
              <tr key={r.version}>
                <td>{r.version}</td>
                <td>
                  <When at={r.publishedAt} />
                </td>
                <td>{r.publishedBy ?? "—"}</td>
                <td>
                  <code>{r.bundleHash.slice(0, 12)}</code>
                </td>
                <td>
                  {r.active ? (
                    <strong>
                      active since <When at={r.activatedAt} />
                    </strong>
                  ) : (
                    <button type="button" class="secondary" onClick={() => activate(r.version)}>
                      Activate {r.version}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {releases.data && (
        <ReleaseDiffView
          key={releases.data.items.map((r) => r.version).join(" ")}
          client={props.client}
          releases={releases.data.items}
        />
      )}
    </main>
  );
}
