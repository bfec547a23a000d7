/** @jsxImportSource preact */

import { useState } from "preact/hooks";
import type { ActuateClient, SignIn } from "../client/index.ts";
import { LoadFailure, type Outcome, OutcomeLine } from "./alert.tsx";
import { ScrollBox } from "./scroll-box.tsx";
import { EmptyState, When } from "./ui.tsx";
import { usePoll } from "./use-poll.ts";

const never = () => false;

/**
 * The apps signed in through this environment's sign-in page (the built-in authority's grants): a
 * person's own; a service key's, everyone's or one person's. Revoking one signs that app out.
 */
export function SignInsPage(props: { client: ActuateClient }) {
  const { client } = props;
  const [person, setPerson] = useState("");
  const [revision, setRevision] = useState(0);
  const [message, setMessage] = useState<Outcome>(null);
  const signIns = usePoll(
    () => client.signIns.list({ user: person || undefined }),
    [client, person, revision],
    0,
    never,
  );
  const revoke = async (signIn: SignIn) => {
    if (!confirm(`Sign ${signIn.client.name} of ${signIn.user} out? It must ask them to sign in again.`)) return;
    setMessage(null);
    try {
      await client.signIns.revoke(signIn.id);
      setMessage({
        text: `${signIn.client.name} is signed out; it must ask ${signIn.user} to sign in again.`,
        error: false,
      });
    } catch (error) {
      setMessage({ text: (error as Error).message, error: true });
    }
    setRevision((r) => r + 1);
  };
  return (
    <main>
      <h1>Signed-in apps</h1>
      <p>
        Apps (agents, editors, this console) that a person allowed to act as them on the sign-in page. Revoking one ends
        it at once: its access stops within a second.
      </p>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Whose sign-ins">
        <label for="sign-ins-person">Person (service keys; empty: everyone, or yourself)</label>
        <input
          id="sign-ins-person"
          type="text"
          value={person}
          onChange={(e) => setPerson(e.currentTarget.value.trim())}
        />
      </form>
      <OutcomeLine outcome={message} />
      <LoadFailure loaded={signIns} />
      {signIns.data && signIns.data.length === 0 && <EmptyState title="No app is signed in." />}
      {signIns.data && signIns.data.length > 0 && (
        <ScrollBox label="Signed-in apps, scrolled">
          <table aria-label="Signed-in apps">
            <thead>
              <tr>
                <th scope="col">App</th>
                <th scope="col">Person</th>
                <th scope="col">Signed in</th>
                <th scope="col">Last refresh</th>
                <th scope="col">Expires</th>
                <th scope="col">
                  <span class="visually-hidden">Revoke</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {signIns.data.map((s) => (
                <tr key={s.id}>
                  <td>{s.client.name}</td>
                  <td>{s.user}</td>
                  <td>
                    <When at={s.signedInAt} />
                  </td>
                  <td>
                    <When at={s.lastRefreshAt} />
                  </td>
                  <td>
                    <When at={s.expiresAt} />
                  </td>
                  <td>
                    <button
                      type="button"
                      class="secondary"
                      aria-label={`Revoke ${s.client.name} of ${s.user}`}
                      onClick={() => revoke(s)}
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
    </main>
  );
}
