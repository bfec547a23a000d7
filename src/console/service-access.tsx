/** @jsxImportSource preact */

import { useEffect, useState } from "preact/hooks";
import { Alert, type Outcome, OutcomeLine } from "./alert.tsx";
import { when } from "./format.ts";
import { ScrollBox } from "./scroll-box.tsx";
import type { ServiceClient, ServiceEnvironment, ServiceGrant, ServiceKey, ServiceScope } from "./service-api.ts";

/** An organization (all of its environments) or one of its environments, as the select names it. */
interface Choice {
  value: string;
  label: string;
  scope: ServiceScope;
}

const choicesOf = (organizations: string[], environments: ServiceEnvironment[]): Choice[] => [
  ...organizations.map((o) => ({ value: `org:${o}`, label: `${o} (every environment)`, scope: { organization: o } })),
  // Environment 1 has no organization, and so no one to grant it: every person of the service may use it.
  ...environments
    .filter((e) => e.organization !== null)
    .map((e) => ({ value: `env:${e.handle}`, label: e.handle, scope: { environment: e.handle } })),
];

/**
 * People and keys of an organization or one environment, for the keys that administer one (an operator's,
 * an organization's): who may use it (grants: list, grant, revoke) and its keys (list, create: the secret
 * shown once, revoke), over the control API's `/orgs/{h}` and `/environments/{h}` `grants` and `keys`.
 */
export function ServiceAccess(props: {
  client: ServiceClient;
  organizations: string[];
  environments: ServiceEnvironment[];
}) {
  const choices = choicesOf(props.organizations, props.environments);
  const [selected, setSelected] = useState(choices[0]?.value ?? "");
  const choice = choices.find((c) => c.value === selected) ?? choices[0];
  if (!choice) return null;
  return (
    <section aria-labelledby="access-heading">
      <h2 id="access-heading">People and keys</h2>
      <label for="access-of">Of</label>
      <select id="access-of" value={choice.value} onChange={(e) => setSelected(e.currentTarget.value)}>
        {choices.map((c) => (
          <option key={c.value} value={c.value}>
            {c.label}
          </option>
        ))}
      </select>
      <Grants key={`grants-${choice.value}`} client={props.client} choice={choice} />
      <Keys key={`keys-${choice.value}`} client={props.client} choice={choice} />
    </section>
  );
}

/** A list that loads again after each change (`revision`), with its failure. */
function useList<T>(load: () => Promise<T[]>, revision: number): { items: T[] | null; error: string | null } {
  const [items, setItems] = useState<T[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: reloaded after each change (revision)
  useEffect(() => {
    let live = true;
    load()
      .then((loaded) => {
        if (!live) return;
        setItems(loaded);
        setError(null);
      })
      .catch((e: Error) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [revision]);
  return { items, error };
}

function Grants(props: { client: ServiceClient; choice: Choice }) {
  const { client, choice } = props;
  const [revision, setRevision] = useState(0);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [user, setUser] = useState("");
  const [busy, setBusy] = useState(false);
  const grants = useList<ServiceGrant>(() => client.grants(choice.scope), revision);
  const act = async (doing: () => Promise<unknown>, done: string) => {
    setBusy(true);
    setOutcome(null);
    try {
      await doing();
      setOutcome({ text: done, error: false });
    } catch (e) {
      setOutcome({ text: (e as Error).message, error: true });
    } finally {
      setBusy(false);
      setRevision((r) => r + 1);
    }
  };
  const grant = async (event: Event) => {
    event.preventDefault();
    const person = user.trim();
    await act(() => client.grant(choice.scope, person), `${person} may use ${choice.label}`);
    setUser("");
  };
  const revoke = (person: string) => {
    if (!confirm(`Take ${choice.label} away from ${person}? Their access there ends within a second.`)) return;
    void act(() => client.revokeGrant(choice.scope, person), `${person} may no longer use ${choice.label}`);
  };
  return (
    <>
      <h3>People</h3>
      <Alert message={grants.error} />
      {grants.items && grants.items.length === 0 && <p>No one was granted {choice.label} here.</p>}
      {grants.items && grants.items.length > 0 && (
        <ScrollBox label="People, scrolled">
          <table aria-label="People">
            <thead>
              <tr>
                <th scope="col">Person</th>
                <th scope="col">Granted</th>
                <th scope="col">
                  <span class="visually-hidden">Revoke</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {grants.items.map((g) => (
                <tr key={g.user}>
                  <td>{g.user}</td>
                  <td>{when(g.createdAt)}</td>
                  <td>
                    <button
                      type="button"
                      class="secondary"
                      aria-label={`Revoke ${g.user}`}
                      disabled={busy}
                      onClick={() => revoke(g.user)}
                    >
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollBox>
      )}
      <form onSubmit={grant} aria-label="Grant a person">
        <label for="grant-user">Person (user id)</label>
        <input id="grant-user" type="text" required value={user} onInput={(e) => setUser(e.currentTarget.value)} />
        <p>
          <button type="submit" disabled={busy}>
            Grant
          </button>
        </p>
      </form>
      <OutcomeLine outcome={outcome} />
    </>
  );
}

function Keys(props: { client: ServiceClient; choice: Choice }) {
  const { client, choice } = props;
  const [revision, setRevision] = useState(0);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const keys = useList<ServiceKey>(() => client.keys(choice.scope), revision);
  const create = async () => {
    setBusy(true);
    setOutcome(null);
    setSecret(null);
    try {
      const made = await client.createKey(choice.scope);
      setSecret(made.key);
    } catch (e) {
      setOutcome({ text: (e as Error).message, error: true });
    } finally {
      setBusy(false);
      setRevision((r) => r + 1);
    }
  };
  const revoke = async (key: ServiceKey) => {
    if (!confirm(`Revoke key ${key.prefix}…? Whatever uses it is refused at once.`)) return;
    setBusy(true);
    setOutcome(null);
    try {
      await client.revokeKey(choice.scope, key.id);
      setOutcome({ text: `Key ${key.prefix}… is revoked`, error: false });
    } catch (e) {
      setOutcome({ text: (e as Error).message, error: true });
    } finally {
      setBusy(false);
      setRevision((r) => r + 1);
    }
  };
  return (
    <>
      <h3>Keys</h3>
      <Alert message={keys.error} />
      {keys.items && keys.items.length === 0 && <p>No key of {choice.label} yet.</p>}
      {keys.items && keys.items.length > 0 && (
        <ScrollBox label="Keys, scrolled">
          <table aria-label="Keys">
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Revoked</th>
                <th scope="col">
                  <span class="visually-hidden">Revoke</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.items.map((k) => (
                <tr key={k.id}>
                  <td>
                    <code>{k.prefix}…</code>
                  </td>
                  <td>{when(k.createdAt)}</td>
                  <td>{when(k.lastUsedAt)}</td>
                  <td>{when(k.revokedAt)}</td>
                  <td>
                    {k.revokedAt === null && (
                      <button
                        type="button"
                        class="secondary"
                        aria-label={`Revoke key ${k.prefix}`}
                        disabled={busy}
                        onClick={() => revoke(k)}
                      >
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollBox>
      )}
      <p>
        <button type="button" onClick={create} disabled={busy}>
          Create key
        </button>
      </p>
      {secret && (
        <div role="status">
          <label for="new-key">New key of {choice.label}: copy it now, it is not shown again</label>
          <input id="new-key" type="text" readOnly value={secret} class="code" />
        </div>
      )}
      <OutcomeLine outcome={outcome} />
    </>
  );
}
