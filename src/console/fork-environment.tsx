import { useState } from "preact/hooks";
import type { Outcome } from "./alert.tsx";
import type { ServiceClient, ServiceEnvironment, ServiceFork } from "./service-api.ts";

/** What a fork copied, in words. */
export function forkOutcome(fork: ServiceFork, data: boolean): string {
  const { copied } = fork;
  const what = data
    ? `${copied.entities} entities, ${copied.links} links, ${copied.files} files`
    : "no data (not asked for)";
  const expires = fork.expiresAt ? `; deleted ${new Date(fork.expiresAt).toLocaleString()}` : "";
  return `${fork.handle} forked from ${fork.forkedFrom}: ${copied.releases} releases, ${copied.variables} variables, ${what}; schedules paused${expires}. It needs keys of its own.`;
}

/**
 * The "Fork" form of one environment (docs/API.md, "Forks: preview environments"): the new handle, whether
 * to copy its data and secrets, and a time to live.
 */
export function ForkEnvironment(props: {
  client: ServiceClient;
  source: ServiceEnvironment;
  onForked: (fork: ServiceFork, data: boolean) => void;
  onFailed: (outcome: Outcome) => void;
  onClose: () => void;
}) {
  const [handle, setHandle] = useState(`${props.source.handle}-preview`);
  const [data, setData] = useState(false);
  const [secrets, setSecrets] = useState(false);
  const [ttl, setTtl] = useState("7d");
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    props.onFailed(null);
    try {
      const fork = await props.client.fork(props.source.handle, {
        handle: handle.trim(),
        data,
        secrets,
        ...(ttl.trim() ? { ttl: ttl.trim() } : {}),
      });
      props.onForked(fork, data);
    } catch (e) {
      props.onFailed({ text: (e as Error).message, error: true });
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={submit} aria-labelledby="fork-heading">
      <h2 id="fork-heading">Fork {props.source.handle}</h2>
      <p class="hint">
        A new environment with its active release, release history and variables; its schedules start paused.
      </p>
      <label for="fork-handle">New handle</label>
      <input id="fork-handle" type="text" required value={handle} onInput={(e) => setHandle(e.currentTarget.value)} />
      <label>
        <input type="checkbox" checked={data} onChange={(e) => setData(e.currentTarget.checked)} /> Copy its data
        (entities, links, files)
      </label>
      <label>
        <input type="checkbox" checked={secrets} onChange={(e) => setSecrets(e.currentTarget.checked)} /> Copy its
        secrets
      </label>
      <label for="fork-ttl">Time to live</label>
      <input id="fork-ttl" type="text" value={ttl} onInput={(e) => setTtl(e.currentTarget.value)} />
      <p class="hint">30m, 12h or 7d (at most 90d); empty: kept until deleted.</p>
      <p>
        <button type="submit" disabled={busy}>
          Fork environment
        </button>{" "}
        <button type="button" onClick={props.onClose}>
          Cancel
        </button>
      </p>
    </form>
  );
}
