/** @jsxImportSource preact */
import { useState } from "preact/hooks";
import type { ActuateClient, Execution, LogLine } from "../client/index.ts";
import { hrefOf } from "./route.ts";
import { usePoll } from "./use-poll.ts";

// Polling keeps the list current for every kind of caller, with one read per interval; the session socket
// follows one execution or one query, not "every execution I may see".
const LIST_EVERY_MS = 2_000;
const DETAIL_EVERY_MS = 1_000;
const STATUSES = ["queued", "running", "succeeded", "failed", "canceled"];

const ended = (execution: Execution) => execution.finishedAt !== null;
const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : "—");

export function ExecutionsPage(props: { client: ActuateClient; id?: string }) {
  return props.id ? <ExecutionDetail client={props.client} id={props.id} /> : <ExecutionList client={props.client} />;
}

function ExecutionList(props: { client: ActuateClient }) {
  const [action, setAction] = useState("");
  const [status, setStatus] = useState("");
  const list = usePoll(
    () => props.client.executions.list({ action: action || undefined, status: status || undefined, limit: 50 }),
    [props.client, action, status],
    LIST_EVERY_MS,
  );
  return (
    <main>
      <h1>Executions</h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filters">
        <label for="filter-action">Action</label>
        <input
          id="filter-action"
          type="text"
          value={action}
          onChange={(e) => setAction(e.currentTarget.value.trim())}
        />
        <label for="filter-status">Status</label>
        <select id="filter-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
          <option value="">any</option>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </form>
      {list.error && (
        <p class="error" role="alert">
          {list.error}
        </p>
      )}
      <table aria-label="Executions">
        <thead>
          <tr>
            <th scope="col">Action</th>
            <th scope="col">Status</th>
            <th scope="col">Caller</th>
            <th scope="col">Created</th>
            <th scope="col">Id</th>
          </tr>
        </thead>
        <tbody>
          {list.data?.items.map((e) => (
            <tr key={e.id}>
              <td>{e.action}</td>
              <td class={`status-${e.status}`}>{e.status}</td>
              <td>
                {e.principal.kind}:{e.principal.id}
              </td>
              <td>{when(e.createdAt)}</td>
              <td>
                <a href={hrefOf({ page: "executions", id: e.id })}>{e.id}</a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.data?.items.length === 0 && <p>No executions yet.</p>}
    </main>
  );
}

function ExecutionDetail(props: { client: ActuateClient; id: string }) {
  const { client, id } = props;
  // The record and its lines together, again while it runs: a running execution's lines are readable.
  const detail = usePoll(
    async () => {
      const execution = await client.executions.get(id);
      return { execution, logs: await allLogs(client, id) };
    },
    [client, id],
    DETAIL_EVERY_MS,
    (d) => !ended(d.execution),
  );
  const e = detail.data?.execution;
  const logs = detail.data?.logs;
  return (
    <main>
      <p>
        <a href={hrefOf({ page: "executions" })}>← Executions</a>
      </p>
      <h1>Execution {id}</h1>
      {detail.error && (
        <p class="error" role="alert">
          {detail.error}
        </p>
      )}
      {e && (
        <>
          <dl>
            <dt>Action</dt>
            <dd>
              <a href={hrefOf({ page: "actions", action: e.action })}>{e.action}</a> ({e.kind})
            </dd>
            <dt>Status</dt>
            <dd class={`status-${e.status}`} data-testid="status">
              {e.status}
            </dd>
            <dt>Caller</dt>
            <dd>
              {e.principal.kind}:{e.principal.id}
            </dd>
            <dt>Release</dt>
            <dd>
              {e.releaseVersion} · contract <code>{e.contractHash.slice(0, 16)}</code>
            </dd>
            <dt>Timing</dt>
            <dd>
              created {when(e.createdAt)}, started {when(e.startedAt)}, finished {when(e.finishedAt)}
            </dd>
          </dl>
          <h2>Input</h2>
          <pre data-testid="input">{JSON.stringify(e.input, null, 2)}</pre>
          {e.output !== undefined && (
            <>
              <h2>Output</h2>
              <pre data-testid="output">{JSON.stringify(e.output, null, 2)}</pre>
            </>
          )}
          {e.errorCode && (
            <>
              <h2>Error</h2>
              <p class="error">
                <code>{e.errorCode}</code> {e.errorMessage}
              </p>
            </>
          )}
        </>
      )}
      <h2>Logs</h2>
      {logs && logs.length === 0 && <p>No lines.</p>}
      {logs && logs.length > 0 && (
        <pre data-testid="logs">
          {logs.map((l) => `${l.at} ${l.level.padEnd(5)} ${l.step ? `[${l.step}] ` : ""}${l.line}`).join("\n")}
        </pre>
      )}
    </main>
  );
}

/** Every line so far: pages until the cursor runs out, or stays on the same page while it runs. */
async function allLogs(client: ActuateClient, id: string): Promise<LogLine[]> {
  const lines: LogLine[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await client.executions.logs(id, { cursor });
    lines.push(...page.items);
    if (!page.nextCursor || page.items.length === 0) return lines;
    cursor = page.nextCursor;
  }
}
