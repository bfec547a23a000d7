/** @jsxImportSource preact */

import { useState } from "preact/hooks";
import type { ActuateClient, PublishedRelease } from "../client/index.ts";
import { Alert } from "./alert.tsx";
import { diffReleases, type ReleaseDiff } from "./contract-diff.ts";

/** Two versions of the history, compared in the page from their published contracts (`GET /releases/{version}`). */
export function ReleaseDiffView(props: { client: ActuateClient; releases: PublishedRelease[] }) {
  const versions = props.releases.map((r) => r.version);
  // Newest first: by default, what the newest release changed from the one before it.
  const [from, setFrom] = useState(versions[1] ?? versions[0] ?? "");
  const [to, setTo] = useState(versions[0] ?? "");
  const [result, setResult] = useState<{ from: string; to: string; diff: ReleaseDiff } | null>(null);
  const [error, setError] = useState<string | null>(null);
  if (versions.length < 2) return null;
  const compare = async (event: Event) => {
    event.preventDefault();
    setError(null);
    try {
      const [a, b] = await Promise.all([props.client.releases.get(from), props.client.releases.get(to)]);
      setResult({ from, to, diff: diffReleases(a.actions, b.actions) });
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const choose = (id: string, label: string, value: string, set: (v: string) => void) => (
    <div>
      <label for={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => set(e.currentTarget.value)}>
        {versions.map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
    </div>
  );
  return (
    <section aria-labelledby="diff-heading">
      <h2 id="diff-heading">Compare two releases</h2>
      <form class="filters" onSubmit={compare} aria-label="Compare releases">
        {choose("diff-from", "From", from, setFrom)}
        {choose("diff-to", "To", to, setTo)}
        <p>
          <button type="submit">Compare</button>
        </p>
      </form>
      <Alert message={error} />
      {result && <DiffResult {...result} />}
    </section>
  );
}

function DiffResult(props: { from: string; to: string; diff: ReleaseDiff }) {
  const { added, removed, changed, unchanged } = props.diff;
  const nothing = added.length + removed.length + changed.length === 0;
  return (
    <article aria-label={`Changes from ${props.from} to ${props.to}`} aria-live="polite">
      <h3>
        From {props.from} to {props.to}
      </h3>
      {nothing && <p>The actions' contracts are the same.</p>}
      {added.length > 0 && (
        <>
          <h4>Added</h4>
          <ul>
            {added.map((a) => (
              <li key={a.name} class="diff-added">
                + <strong>{a.name}</strong> ({a.kind}, {a.access}) {a.description}
              </li>
            ))}
          </ul>
        </>
      )}
      {removed.length > 0 && (
        <>
          <h4>Removed</h4>
          <ul>
            {removed.map((a) => (
              <li key={a.name} class="diff-removed">
                − <strong>{a.name}</strong>
              </li>
            ))}
          </ul>
        </>
      )}
      {changed.length > 0 && (
        <>
          <h4>Changed</h4>
          {changed.map((c) => (
            <section key={c.name} aria-label={`Changes to ${c.name}`}>
              <h5>{c.name}</h5>
              <ul>
                {c.changes.map((change) => (
                  <li key={`${change.part} ${change.where} ${change.text}`} class="diff-changed">
                    {change.part}
                    {change.where && (
                      <>
                        {" "}
                        <code>{change.where}</code>
                      </>
                    )}
                    : <code>{change.text}</code>
                  </li>
                ))}
              </ul>
            </section>
          ))}
        </>
      )}
      {unchanged.length > 0 && <p class="hint">Unchanged: {unchanged.join(", ")}.</p>}
    </article>
  );
}
