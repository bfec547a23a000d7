/** @jsxImportSource preact */
import { useState } from "preact/hooks";
import { clientFor } from "./session.ts";

/** Pasting a user token or a service key; it is checked against the server before it is kept. */
export function SignIn(props: { onSignedIn: (credential: string) => void }) {
  const [credential, setCredential] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await clientFor(credential.trim()).contracts.list();
      props.onSignedIn(credential.trim());
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main>
      <h1>Sign in to the Actuate console</h1>
      <form onSubmit={submit}>
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
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
