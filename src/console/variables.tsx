/** @jsxImportSource preact */

import { useState } from "preact/hooks";
import type { VariableView } from "../wire/views.ts";
import { LoadFailure, type Outcome, OutcomeLine } from "./alert.tsx";
import { ScrollBox } from "./scroll-box.tsx";
import { EmptyState, When } from "./ui.tsx";
import { usePoll } from "./use-poll.ts";
import { variablesApi } from "./variables-api.ts";

const never = () => false;

/** What the active release makes of a variable: the badges of its row. */
function badges(v: VariableView): string[] {
  const out: string[] = [];
  if (v.declared) out.push("declared");
  if (v.required) out.push("required");
  if (v.required && !v.set) out.push("missing");
  if (!v.declared) out.push("not declared");
  return out;
}

/**
 * The environment's variables and secrets (service keys): set, replace and unset them. A secret's value
 * is never sent to this page (the API has no answer that holds it); it is typed into a password field
 * and sent once.
 */
export function VariablesPage() {
  const [revision, setRevision] = useState(0);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [name, setName] = useState("");
  const [value, setValue] = useState("");
  const [secret, setSecret] = useState(false);
  const variables = usePoll(() => variablesApi.list(), [revision], 0, never);

  const act = async (work: () => Promise<unknown>, done: string) => {
    setOutcome(null);
    try {
      await work();
      setOutcome({ text: done, error: false });
      return true;
    } catch (error) {
      setOutcome({ text: (error as Error).message, error: true });
      return false;
    } finally {
      setRevision((r) => r + 1);
    }
  };
  const save = async (e: Event) => {
    e.preventDefault();
    const saved = name.trim();
    if (await act(() => variablesApi.set(saved, value, secret), `${saved} is set; the next invocation reads it`)) {
      setValue("");
      setName("");
      setSecret(false);
    }
  };
  const unset = (v: VariableView) => {
    if (!confirm(`Unset ${v.name}?${v.required ? " The release requires it: publishing will be refused." : ""}`))
      return;
    void act(() => variablesApi.unset(v.name), `${v.name} is unset`);
  };
  const edit = (v: VariableView) => {
    setName(v.name);
    setSecret(v.secret);
    setValue(v.secret ? "" : (v.value ?? ""));
  };

  const missing = variables.data?.filter((v) => v.required && !v.set) ?? [];
  return (
    <main>
      <h1>Variables</h1>
      <p>
        What handlers read as <code>ctx.env</code>. A change reaches the next invocation on every server, without
        publishing again. A secret is stored encrypted and never shown again, here or anywhere.
      </p>
      {missing.length > 0 && (
        <p class="error" role="alert">
          The release requires {missing.map((v) => v.name).join(", ")}: set {missing.length > 1 ? "them" : "it"} before
          publishing.
        </p>
      )}
      <OutcomeLine outcome={outcome} />
      <LoadFailure loaded={variables} />
      {variables.data && variables.data.length === 0 && <EmptyState title="No variable is set or declared." />}
      {variables.data && variables.data.length > 0 && (
        <ScrollBox label="Variables, scrolled">
          <table aria-label="Variables">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Kind</th>
                <th scope="col">Value</th>
                <th scope="col">Updated</th>
                <th scope="col">By</th>
                <th scope="col">Release</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {variables.data.map((v) => (
                <tr key={v.name}>
                  <td>
                    <code>{v.name}</code>
                  </td>
                  <td>{v.secret ? "secret" : "plain"}</td>
                  <td>{v.secret ? v.set ? "••••" : "—" : v.set ? <code>{v.value}</code> : "—"}</td>
                  <td>
                    <When at={v.updatedAt} />
                  </td>
                  <td>{v.updatedBy ?? "—"}</td>
                  <td>
                    {badges(v).map((b) => (
                      <span key={b} class={b === "missing" ? "badge error" : "badge"}>
                        {b}{" "}
                      </span>
                    ))}
                  </td>
                  <td>
                    <button type="button" class="secondary" onClick={() => edit(v)} aria-label={`Change ${v.name}`}>
                      Change
                    </button>{" "}
                    {v.set && (
                      <button type="button" class="secondary" onClick={() => unset(v)} aria-label={`Unset ${v.name}`}>
                        Unset
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollBox>
      )}
      <form onSubmit={save} aria-label="Set a variable">
        <h2>Set a variable</h2>
        <label for="variable-name">Name</label>
        <input
          id="variable-name"
          type="text"
          required
          pattern="[A-Z_][A-Z0-9_]*"
          autocomplete="off"
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <p>
          <input
            id="variable-secret"
            type="checkbox"
            checked={secret}
            onChange={(e) => setSecret(e.currentTarget.checked)}
          />{" "}
          <label for="variable-secret" class="inline">
            Secret: encrypted, write-only, at least 8 characters
          </label>
        </p>
        <label for="variable-value">Value</label>
        {secret ? (
          <input
            id="variable-value"
            type="password"
            required
            minLength={8}
            autocomplete="new-password"
            value={value}
            onInput={(e) => setValue(e.currentTarget.value)}
          />
        ) : (
          <input
            id="variable-value"
            type="text"
            required
            autocomplete="off"
            value={value}
            onInput={(e) => setValue(e.currentTarget.value)}
          />
        )}
        <p>
          <button type="submit">Set</button>
        </p>
      </form>
    </main>
  );
}
