/** @jsxImportSource preact */

import { useEffect, useState } from "preact/hooks";
import { Alert } from "./alert.tsx";
import {
  type AuthorityMetadata,
  abandonedSignIn,
  beginSignIn,
  builtInAuthority,
  finishSignIn,
  redirectBack,
} from "./built-in-sign-in.ts";
import { type Credential, clientFor } from "./session.ts";

/**
 * The built-in sign-in when the environment has one, and pasting a user token or a service key; either
 * credential is checked against the server before it is kept. A redirect back from the built-in sign-in
 * is exchanged for a token. `notice`: why the person is here again (an ended sign-in).
 */
export function SignIn(props: { onSignedIn: (credential: Credential) => void; notice: string | null }) {
  const [redirect] = useState(redirectBack);
  const [credential, setCredential] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(redirect !== null);
  const [authority, setAuthority] = useState<AuthorityMetadata | null>(null);

  const accept = async (candidate: Credential) => {
    await clientFor(candidate.token).contracts.list();
    props.onSignedIn(candidate);
  };

  // biome-ignore lint/correctness/useExhaustiveDependencies: on mount only: a redirect back is exchanged once
  useEffect(() => {
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

  const paste = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await accept({ token: credential.trim(), expiresAt: null });
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const builtIn = async () => {
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
    <main class="sign-in">
      <h1>Sign in to the Actuate console</h1>
      {props.notice && !error && (
        <p class="notice" role="status">
          {props.notice}
        </p>
      )}
      <Alert message={error} />
      {authority && (
        <section aria-labelledby="built-in-heading">
          <h2 id="built-in-heading">With your account</h2>
          <p>
            <button type="button" onClick={builtIn} disabled={busy}>
              Continue with this environment's sign-in page
            </button>
          </p>
          <p class="hint">Your user and password on this environment's own sign-in page; you come back here.</p>
        </section>
      )}
      <form onSubmit={paste} aria-label="Sign in with a token or key">
        {authority && <h2>Or with a token or key</h2>}
        <label for="credential">Token or service key</label>
        <input
          id="credential"
          type="password"
          autocomplete="off"
          required
          value={credential}
          onInput={(e) => setCredential(e.currentTarget.value)}
        />
        <p class="hint">
          A user token (<code>bun run token create --user &lt;id&gt;</code>) or a service key. It is kept in this tab
          only (sessionStorage).
        </p>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
