/** @jsxImportSource preact */

import type { ActuateClient } from "../client/index.ts";
import { Alert } from "./alert.tsx";
import { durationOf, sizeOf } from "./format.ts";
import { hrefOf } from "./route.ts";
import { EmptyState, LoadingState, ShortId, StatusBadge, When } from "./ui.tsx";
import { useFollowedExecution } from "./use-followed-execution.ts";

/** An execution's files sent as inputs, as `/executions/{id}` lists them. */
interface Upload {
  field: string;
  path: string;
  filename: string;
  contentType: string;
  size: number;
}

export function ExecutionDetail(props: { client: ActuateClient; id: string }) {
  const { client, id } = props;
  const detail = useFollowedExecution(client, id);
  const e = detail.data?.execution;
  const logs = detail.data?.logs;
  const uploads = ((e as { uploads?: Upload[] } | undefined)?.uploads ?? []) as Upload[];
  return (
    <main>
      <p>
        <a href={hrefOf({ page: "executions" })}>← Executions</a>
      </p>
      <h1>
        Execution <code>{id}</code>
      </h1>
      <Alert message={detail.error} />
      {!e && !detail.error && <LoadingState what="the execution" />}
      {e && (
        <>
          <p>
            <a class="button-link" href={hrefOf({ page: "actions", action: e.action, from: e.id })}>
              Run again with this input
            </a>
          </p>
          <dl>
            <dt>Action</dt>
            <dd>
              <a href={hrefOf({ page: "actions", action: e.action })}>{e.action}</a> ({e.kind})
            </dd>
            <dt>Status</dt>
            <dd>
              <StatusBadge status={e.status} testId="status" />
            </dd>
            <dt>Caller</dt>
            <dd>
              {e.principal.kind}:{e.principal.id}
            </dd>
            <dt>Release</dt>
            <dd>{e.releaseVersion}</dd>
            <dt>Contract hash</dt>
            <dd>
              <ShortId id={e.contractHash} label="contract hash" />
            </dd>
            <dt>Created</dt>
            <dd>
              <When at={e.createdAt} />
            </dd>
            <dt>Started</dt>
            <dd>
              <When at={e.startedAt} /> <span class="hint">waited {durationOf(e.createdAt, e.startedAt)}</span>
            </dd>
            <dt>Finished</dt>
            <dd>
              <When at={e.finishedAt} /> <span class="hint">ran {durationOf(e.startedAt, e.finishedAt)}</span>
            </dd>
          </dl>
          <h2>Input</h2>
          <pre data-testid="input">{JSON.stringify(e.input, null, 2)}</pre>
          {uploads.length > 0 && (
            <>
              <h2>Uploads</h2>
              <table aria-label="Uploads">
                <thead>
                  <tr>
                    <th scope="col">Field</th>
                    <th scope="col">File</th>
                    <th scope="col">Type</th>
                    <th scope="col" class="num">
                      Size
                    </th>
                    <th scope="col">Stored at</th>
                  </tr>
                </thead>
                <tbody>
                  {uploads.map((u) => (
                    <tr key={u.path}>
                      <td>{u.field}</td>
                      <td>{u.filename}</td>
                      <td>{u.contentType}</td>
                      <td class="num">{sizeOf(u.size)}</td>
                      <td>
                        <code>{u.path}</code>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
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
      {logs && logs.length === 0 && <EmptyState title="No lines." />}
      {logs && logs.length > 0 && (
        <pre data-testid="logs">
          {logs.map((l) => `${l.at} ${l.level.padEnd(5)} ${l.step ? `[${l.step}] ` : ""}${l.line}`).join("\n")}
        </pre>
      )}
    </main>
  );
}
