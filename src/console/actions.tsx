/** @jsxImportSource preact */

import { useState } from "preact/hooks";
import { type ActuateClient, ActuateError, type Execution, type Issue } from "../client/index.ts";
import { LoadFailure } from "./alert.tsx";
import { ActionCharts } from "./charts.tsx";
import { fieldsOf } from "./fields.ts";
import { valuesOf } from "./prefill.ts";
import { hrefOf } from "./route.ts";
import { RunProgress } from "./runs.tsx";
import { SchemaForm } from "./schema-form.tsx";
import { EmptyState, LoadingState, ShortId, StatusBadge } from "./ui.tsx";
import { Uploads } from "./uploads.tsx";
import { usePoll } from "./use-poll.ts";

const never = () => false;

export function ActionsPage(props: { client: ActuateClient; action?: string; from?: string }) {
  const { client } = props;
  const actions = usePoll(() => client.contracts.list(), [client], 0, never);
  return (
    <main class="layout">
      <nav aria-label="Actions">
        <h1>Actions</h1>
        <LoadFailure loaded={actions} />
        {!actions.data && !actions.error && <LoadingState what="actions" />}
        <ul class="nav-list">
          {actions.data?.map((action) => (
            <li key={action.name}>
              <a
                href={hrefOf({ page: "actions", action: action.name })}
                aria-current={action.name === props.action ? "page" : undefined}
              >
                {action.name}
              </a>{" "}
              <span class="hint">{action.kind}</span>
            </li>
          ))}
        </ul>
        {actions.data?.length === 0 && <EmptyState title="The active release has no action you may call." />}
      </nav>
      <section>
        {props.action ? (
          <ActionDetail key={`${props.action} ${props.from}`} client={client} name={props.action} from={props.from} />
        ) : (
          <EmptyState title="Choose an action.">Its contract and a form to run it open here.</EmptyState>
        )}
      </section>
    </main>
  );
}

/** `from`: an execution whose input fills the form ("run again with this input"). */
function ActionDetail(props: { client: ActuateClient; name: string; from?: string }) {
  const { client, name, from } = props;
  const contract = usePoll(() => client.contracts.get(name), [name], 0, never);
  const previous = usePoll(async () => (from ? await client.executions.get(from) : null), [client, from], 0, never);
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{
    execution?: Execution;
    runId?: string;
    error?: string;
    issues?: Issue[];
  } | null>(null);

  const invoke = async (input: Record<string, unknown>, files: Record<string, File>) => {
    setBusy(true);
    setOutcome(null);
    try {
      const answer = await client.invoke(name, input, { files });
      // A workflow answers once its run is admitted: the page follows the run from there.
      setOutcome({ execution: answer.execution, runId: "runId" in answer ? answer.runId : undefined });
    } catch (error) {
      // A failed handler still made an execution: show it.
      const executionId = error instanceof ActuateError ? (error.details.executionId ?? undefined) : undefined;
      const execution = executionId ? await client.executions.get(executionId).catch(() => undefined) : undefined;
      const issues = error instanceof ActuateError ? error.issues : [];
      setOutcome({ execution, error: (error as Error).message, issues });
    } finally {
      setBusy(false);
    }
  };

  if (contract.error) return <LoadFailure loaded={contract} />;
  const c = contract.data;
  if (!c || (from && !previous.data && !previous.error)) return <LoadingState what={name} />;
  const again = previous.data?.action === name ? previous.data : null;
  return (
    <article>
      <h2>{c.name}</h2>
      <p>{c.description}</p>
      <dl>
        <dt>Kind</dt>
        <dd>{c.kind}</dd>
        <dt>Access</dt>
        <dd>{c.access}</dd>
        <dt>Contract hash</dt>
        <dd>
          <ShortId id={c.contractHash} label="contract hash" />
        </dd>
      </dl>
      <ActionCharts client={props.client} action={c.name} />
      <h3>Run it</h3>
      {again && (
        <p role="status">
          Filled in with the input of execution <a href={hrefOf({ page: "executions", id: again.id })}>{again.id}</a>.
        </p>
      )}
      {from && !again && (
        <p class="error" role="alert">
          Execution {from} is not one of {name} you may see: {previous.error ?? "it ran another action"}.
        </p>
      )}
      <SchemaForm
        id="input"
        schema={c.input}
        files={c.files}
        submitLabel={`Run ${c.name}`}
        busy={busy}
        initial={again ? valuesOf(fieldsOf(c.input), again.input) : undefined}
        onSubmit={invoke}
      />
      {outcome && (
        // A run's progress changes every second: only its status line (role=status) is announced.
        <section aria-label="Outcome" aria-live={outcome.runId ? "off" : "polite"}>
          {outcome.error && (
            <div class="error" role="alert">
              <p>{outcome.error}</p>
              {outcome.issues && outcome.issues.length > 0 && (
                <ul>
                  {outcome.issues.map((issue) => (
                    <li key={`${issue.where} ${issue.code}`}>
                      <code>{issue.where}</code>: {issue.message}
                    </li>
                  ))}
                </ul>
              )}
            </div>
          )}
          {outcome.runId && <RunProgress client={client} id={outcome.runId} />}
          {outcome.execution && !outcome.runId && (
            <p>
              Execution{" "}
              <ShortId
                id={outcome.execution.id}
                href={hrefOf({ page: "executions", id: outcome.execution.id })}
                label="Execution"
              />
              : <StatusBadge status={outcome.execution.status} />
            </p>
          )}
          {outcome.execution?.uploads && outcome.execution.uploads.length > 0 && (
            <Uploads client={client} uploads={outcome.execution.uploads} />
          )}
          {outcome.execution?.output !== undefined && (
            <pre data-testid="output">{JSON.stringify(outcome.execution.output, null, 2)}</pre>
          )}
        </section>
      )}
      <details>
        <summary>Contract</summary>
        <h4>Input</h4>
        <pre>{JSON.stringify(c.input, null, 2)}</pre>
        <h4>Output</h4>
        <pre>{JSON.stringify(c.output, null, 2)}</pre>
      </details>
    </article>
  );
}
