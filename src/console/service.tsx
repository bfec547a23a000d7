/** @jsxImportSource preact */

import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { Alert, type Outcome, OutcomeLine } from "./alert.tsx";
import {
  type AuthorityMetadata,
  abandonedSignIn,
  beginSignIn,
  builtInAuthority,
  finishSignIn,
  redirectBack,
} from "./built-in-sign-in.ts";
import { ForkEnvironment, forkOutcome } from "./fork-environment.tsx";
import { ServiceAccess } from "./service-access.tsx";
import { type ServiceClient, type ServiceEnvironment, type ServiceFork, serviceClient } from "./service-api.ts";
import { type Credential, forgetCredential, storeCredential, storedCredential } from "./session.ts";

const REFUSED = "The service no longer accepts this key (it was revoked). Sign in again.";
const ENDED = "Your sign-in ended. Sign in again.";

/** A token from the service's sign-in has an end; a pasted key has none. */
const isPerson = (credential: Credential) => credential.expiresAt !== null;

/**
 * The console on the service's apex (hosting mode). A person signs in through the service's authority
 * (resource: the apex) and sees the environments they may open, each a link to its own console, whose
 * sign-in the same authority then answers without the password. An operator or organization key (or an
 * environment's) lists the environments it may open, makes one, and administers its people and keys.
 */
export function ServiceConsole() {
  const [credential, setCredential] = useState(() => {
    const stored = storedCredential();
    return stored && (stored.expiresAt === null || stored.expiresAt > Date.now()) ? stored : null;
  });
  const [notice, setNotice] = useState<string | null>(null);
  const signOut = useCallback((why: string | null) => {
    forgetCredential();
    setNotice(why);
    setCredential(null);
  }, []);
  const client = useMemo(
    () => (credential ? serviceClient(credential.token, () => signOut(isPerson(credential) ? ENDED : REFUSED)) : null),
    [credential, signOut],
  );
  if (!client || !credential) {
    return (
      <ServiceSignIn
        notice={notice}
        onSignedIn={(signedIn) => {
          storeCredential(signedIn);
          setNotice(null);
          setCredential(signedIn);
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
      <EnvironmentsPage client={client} person={isPerson(credential)} />
    </>
  );
}

function ServiceSignIn(props: { onSignedIn: (credential: Credential) => void; notice: string | null }) {
  const [redirect] = useState(redirectBack);
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(redirect !== null);
  const [authority, setAuthority] = useState<AuthorityMetadata | null>(null);
  // Checked before it is kept: the list the credential may see.
  const accept = async (candidate: Credential) => {
    await serviceClient(candidate.token).environments();
    props.onSignedIn(candidate);
  };

  // biome-ignore lint/correctness/useExhaustiveDependencies: on mount only: a redirect back is exchanged once
  useEffect(() => {
    // The apex's own authority (none with AUTH_ISSUER); the token asked for is the apex's (its issuer).
    builtInAuthority().then(setAuthority);
    if (!redirect) {
      if (abandonedSignIn()) setError("The last sign-in did not come back here. Try again.");
      return;
    }
    finishSignIn(redirect)
      .then(({ accessToken, expiresAt }) => accept({ token: accessToken, expiresAt }))
      .catch((e: Error) => setError(e.message))
      .finally(() => setBusy(false));
  }, []);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await accept({ token: key.trim(), expiresAt: null });
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const withAccount = async () => {
    if (!authority) return;
    setBusy(true);
    setError(null);
    try {
      await beginSignIn(authority);
    } catch (e) {
      setError((e as Error).message);
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
      {authority && (
        <section aria-labelledby="account-heading">
          <h2 id="account-heading">With your account</h2>
          <p>
            <button type="button" onClick={withAccount} disabled={busy}>
              Continue to the service's sign-in page
            </button>
          </p>
          <p class="hint">
            Your user and password on the service's sign-in page; you come back here to the environments you may open.
          </p>
        </section>
      )}
      <form onSubmit={submit} aria-label="Sign in with a key">
        {authority && <h2>Or with a key</h2>}
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
          ). It is kept in this tab only (sessionStorage).
        </p>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}

function EnvironmentsPage(props: { client: ServiceClient; person: boolean }) {
  const [environments, setEnvironments] = useState<ServiceEnvironment[] | null>(null);
  const [organizations, setOrganizations] = useState<string[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [revision, setRevision] = useState(0);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [forking, setForking] = useState<ServiceEnvironment | null>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: reloaded after a creation (revision)
  useEffect(() => {
    let live = true;
    // A person administers nothing here: only keys read organizations.
    Promise.all([props.client.environments(), props.person ? [] : props.client.organizations()])
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
  const forked = (fork: ServiceFork, data: boolean) => {
    setForking(null);
    setOutcome({ text: forkOutcome(fork, data), error: false });
    setRevision((r) => r + 1);
  };
  return (
    <main>
      <h1>Environments</h1>
      <Alert message={error} />
      {environments && environments.length === 0 && (
        <p>
          {props.person
            ? "No environment was granted to you yet: an administrator of its organization can grant it."
            : "No environment this key may open yet."}
        </p>
      )}
      {environments && environments.length > 0 && (
        <table aria-label="Environments">
          <thead>
            <tr>
              <th scope="col">Environment</th>
              <th scope="col">Organization</th>
              <th scope="col">Active release</th>
              <th scope="col">Created</th>
              <th scope="col">Forked from</th>
              <th scope="col">Expires</th>
              {!props.person && <th scope="col">Fork</th>}
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
                <td>{e.forkedFrom ?? "—"}</td>
                <td>{e.expiresAt ? new Date(e.expiresAt).toLocaleString() : "—"}</td>
                {!props.person && (
                  <td>
                    <button type="button" aria-label={`Fork ${e.handle}`} onClick={() => setForking(e)}>
                      Fork
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <OutcomeLine outcome={outcome} />
      {forking && (
        <ForkEnvironment
          key={forking.handle}
          client={props.client}
          source={forking}
          onForked={forked}
          onFailed={setOutcome}
          onClose={() => setForking(null)}
        />
      )}
      {organizations.length > 0 && (
        <CreateEnvironment
          client={props.client}
          organizations={organizations}
          onCreated={created}
          onFailed={setOutcome}
        />
      )}
      {environments && organizations.length > 0 && (
        <ServiceAccess client={props.client} organizations={organizations} environments={environments} />
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
