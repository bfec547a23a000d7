/** @jsxImportSource preact */

import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { Alert, type Outcome, OutcomeLine } from "./alert.tsx";
import { type ServiceClient, type ServiceEnvironment, serviceClient } from "./service-api.ts";
import { forgetCredential, storeCredential, storedCredential } from "./session.ts";

const REFUSED = "The service no longer accepts this key (it was revoked). Sign in again.";

/**
 * The console on the service's apex (hosting mode): sign in with an operator or organization key (or an
 * environment's), list the environments it may open, each a link to its own console, and make one.
 * People sign in on an environment's console: their tokens are each one environment's.
 */
export function ServiceConsole() {
  const [token, setToken] = useState(() => storedCredential()?.token ?? null);
  const [notice, setNotice] = useState<string | null>(null);
  const signOut = useCallback((why: string | null) => {
    forgetCredential();
    setNotice(why);
    setToken(null);
  }, []);
  const client = useMemo(() => (token ? serviceClient(token, () => signOut(REFUSED)) : null), [token, signOut]);
  if (!client) {
    return (
      <ServiceSignIn
        notice={notice}
        onSignedIn={(key) => {
          storeCredential({ token: key, expiresAt: null });
          setNotice(null);
          setToken(key);
        }}
      />
    );
  }
  return (
    <>
      <header>
        <strong>Actuate service</strong>
        <nav aria-label="Pages">
          <a href="#/environments" aria-current="page">
            Environments
          </a>
        </nav>
        <button type="button" class="secondary who" onClick={() => signOut(null)}>
          Sign out
        </button>
      </header>
      <EnvironmentsPage client={client} />
    </>
  );
}

function ServiceSignIn(props: { onSignedIn: (key: string) => void; notice: string | null }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      // Checked before it is kept: the list a key may see.
      await serviceClient(key.trim()).environments();
      props.onSignedIn(key.trim());
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main>
      <h1>Sign in to the Actuate service</h1>
      {props.notice && !error && (
        <p class="notice" role="status">
          {props.notice}
        </p>
      )}
      <Alert message={error} />
      <form onSubmit={submit} aria-label="Sign in with a key">
        <label for="credential">Token or service key</label>
        <input
          id="credential"
          type="password"
          autocomplete="off"
          required
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
        />
        <p class="hint">
          An operator key (<code>SERVICE_KEYS</code>) or an organization's key (
          <code>key create --org &lt;org&gt;</code>
          ). To use an environment with your account, open its own console. It is kept in this tab only
          (sessionStorage).
        </p>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}

function EnvironmentsPage(props: { client: ServiceClient }) {
  const [environments, setEnvironments] = useState<ServiceEnvironment[] | null>(null);
  const [organizations, setOrganizations] = useState<string[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [revision, setRevision] = useState(0);
  const [outcome, setOutcome] = useState<Outcome>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: reloaded after a creation (revision)
  useEffect(() => {
    let live = true;
    Promise.all([props.client.environments(), props.client.organizations()])
      .then(([envs, orgs]) => {
        if (!live) return;
        setEnvironments(envs);
        setOrganizations(orgs.map((o) => o.handle));
        setError(null);
      })
      .catch((e: Error) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [props.client, revision]);
  const created = (env: ServiceEnvironment) => {
    setOutcome({ text: `${env.handle} created (no release yet)`, error: false });
    setRevision((r) => r + 1);
  };
  return (
    <main>
      <h1>Environments</h1>
      <Alert message={error} />
      {environments && environments.length === 0 && <p>No environment this key may open yet.</p>}
      {environments && environments.length > 0 && (
        <table aria-label="Environments">
          <thead>
            <tr>
              <th scope="col">Environment</th>
              <th scope="col">Organization</th>
              <th scope="col">Active release</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {environments.map((e) => (
              <tr key={e.handle}>
                <td>
                  <a href={`${e.url}/console`}>{e.handle}</a>
                </td>
                <td>{e.organization ?? "—"}</td>
                <td>{e.activeVersion ?? "none"}</td>
                {/* Environment 1 (single mode's database) has no creation time: its row predates hosting. */}
                <td>{Date.parse(e.createdAt) > 0 ? new Date(e.createdAt).toLocaleString() : "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <OutcomeLine outcome={outcome} />
      {organizations.length > 0 && (
        <CreateEnvironment
          client={props.client}
          organizations={organizations}
          onCreated={created}
          onFailed={setOutcome}
        />
      )}
    </main>
  );
}

/** Shown to the keys that administer an organization (an operator's, an organization's). */
function CreateEnvironment(props: {
  client: ServiceClient;
  organizations: string[];
  onCreated: (env: ServiceEnvironment) => void;
  onFailed: (outcome: Outcome) => void;
}) {
  const [handle, setHandle] = useState("");
  const [organization, setOrganization] = useState(props.organizations[0] ?? "");
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    props.onFailed(null);
    try {
      props.onCreated(await props.client.createEnvironment(handle.trim(), organization));
      setHandle("");
    } catch (e) {
      props.onFailed({ text: (e as Error).message, error: true });
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={submit} aria-labelledby="create-heading">
      <h2 id="create-heading">New environment</h2>
      <label for="env-handle">Handle</label>
      <input id="env-handle" type="text" required value={handle} onInput={(e) => setHandle(e.currentTarget.value)} />
      <p class="hint">Lowercase letters, digits and hyphens: it names the environment's host.</p>
      <label for="env-organization">Organization</label>
      <select id="env-organization" value={organization} onChange={(e) => setOrganization(e.currentTarget.value)}>
        {props.organizations.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
      <p>
        <button type="submit" disabled={busy}>
          Create environment
        </button>
      </p>
    </form>
  );
}
