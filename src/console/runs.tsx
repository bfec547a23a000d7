/** @jsxImportSource preact */

import { useState } from "preact/hooks";
import type { ActuateClient, Run, RunStatus, RunStep } from "../client/index.ts";
import { RUN_STATUSES } from "../wire/statuses.ts";
import { LoadFailure } from "./alert.tsx";
import { duration, spanMs, when } from "./format.ts";
import { hrefOf, type RunFilters } from "./route.ts";
import { RunTimeline } from "./run-timeline.tsx";
import { ScrollBox } from "./scroll-box.tsx";
import { EmptyState, LoadingState, ShortId, StatusBadge, When } from "./ui.tsx";
import { useLiveList } from "./use-live-list.ts";
import { usePoll } from "./use-poll.ts";

// The list is kept current by the session socket (subscribe-runs). A run's stream carries its log lines
// and status, not its steps' rows, so the timeline reads `GET /runs/{id}` again (one read per second
// while the run has not ended; none after).
const RUN_EVERY_MS = 1_000;

const runEnded = (run: { finishedAt: string | null }) => run.finishedAt !== null;

export function RunsPage(props: { client: ActuateClient; id?: string; filters?: RunFilters }) {
  return props.id ? (
    <RunDetail client={props.client} id={props.id} />
  ) : (
    <RunList client={props.client} filters={props.filters ?? {}} />
  );
}

function RunList(props: { client: ActuateClient; filters: RunFilters }) {
  // The filters live in the hash: a link shows what its sender saw, back and forward go through them.
  const workflow = props.filters.workflow ?? "";
  const status = (props.filters.status ?? "") as RunStatus | "";
  const filter = (change: RunFilters) => {
    location.hash = hrefOf({ page: "runs", filters: { ...props.filters, ...change } });
  };
  const filters = { workflow: workflow || undefined, status: status || undefined };
  const list = useLiveList(props.client, "runs", filters, () => props.client.runs.list({ ...filters, limit: 50 }), [
    props.client,
    workflow,
    status,
  ]);
  return (
    <main>
      <h1>Runs</h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filters">
        <label for="filter-workflow">Workflow</label>
        <input
          id="filter-workflow"
          type="text"
          defaultValue={workflow}
          key={workflow}
          onChange={(e) => filter({ workflow: e.currentTarget.value.trim() })}
        />
        <label for="filter-run-status">Status</label>
        <select id="filter-run-status" value={status} onChange={(e) => filter({ status: e.currentTarget.value })}>
          <option value="">any</option>
          {RUN_STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </form>
      <LoadFailure loaded={list} />
      <ScrollBox label="Runs, scrolled">
        <table aria-label="Runs">
          <thead>
            <tr>
              <th scope="col">Workflow</th>
              <th scope="col">Status</th>
              <th scope="col">Started</th>
              <th scope="col" class="num">
                Duration
              </th>
              <th scope="col">Id</th>
            </tr>
          </thead>
          <tbody>
            {list.data?.items.map((run) => (
              <tr key={run.id}>
                <td>{run.workflow}</td>
                <td>
                  <StatusBadge status={run.status} />
                </td>
                <td>
                  <When at={run.createdAt} />
                </td>
                <td class="num">
                  {duration(spanMs(run.createdAt, run.finishedAt))}
                  {runEnded(run) ? "" : " so far"}
                </td>
                <td>
                  <ShortId id={run.id} href={hrefOf({ page: "runs", id: run.id })} label="Run" />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollBox>
      {!list.data && !list.error && <LoadingState what="runs" />}
      {list.data?.items.length === 0 && (
        <EmptyState title="No runs yet.">A workflow action started from the Actions page is listed here.</EmptyState>
      )}
    </main>
  );
}

function RunDetail(props: { client: ActuateClient; id: string }) {
  const { client, id } = props;
  const detail = usePoll(
    () => client.runs.get(id),
    [client, id],
    RUN_EVERY_MS,
    (run) => !runEnded(run),
  );
  const [cancel, setCancel] = useState<{ busy: boolean; message: string | null; error: boolean }>({
    busy: false,
    message: null,
    error: false,
  });
  const askCancel = async (workflow: string) => {
    if (!confirm(`Cancel run ${id} of ${workflow}? A waiting run ends at once, a running one after its step.`)) return;
    setCancel({ busy: true, message: null, error: false });
    try {
      const run = await client.runs.cancel(id);
      const message = run.status === "canceled" ? "The run is canceled." : "Cancel requested: it stops after its step.";
      setCancel({ busy: false, message, error: false });
    } catch (error) {
      setCancel({ busy: false, message: (error as Error).message, error: true });
    }
  };
  const run = detail.data;
  return (
    <main>
      <p>
        <a href={hrefOf({ page: "runs" })}>← Runs</a>
      </p>
      <h1>
        Run <code>{id}</code>
      </h1>
      <LoadFailure loaded={detail} />
      {!run && !detail.error && <LoadingState what="the run" />}
      {run && (
        <>
          <dl>
            <dt>Workflow</dt>
            <dd>
              <a href={hrefOf({ page: "actions", action: run.workflow })}>{run.workflow}</a> (release{" "}
              {run.releaseVersion})
            </dd>
            <dt>Status</dt>
            <dd data-testid="run-status">
              <StatusBadge status={run.status} />
              {run.cancelRequested && !runEnded(run) ? " (cancel requested)" : ""}
            </dd>
            <dt>Started</dt>
            <dd>
              <When at={run.createdAt} />
            </dd>
            <dt>{runEnded(run) ? "Finished" : "Running for"}</dt>
            <dd>
              {runEnded(run) && (
                <>
                  <When at={run.finishedAt} />{" "}
                </>
              )}
              <span class="hint">
                {runEnded(run) ? "took " : ""}
                {duration(spanMs(run.createdAt, run.finishedAt))}
              </span>
            </dd>
            <dt>Execution</dt>
            <dd>
              <ShortId
                id={run.executionId}
                href={hrefOf({ page: "executions", id: run.executionId })}
                label="Execution"
              />
            </dd>
          </dl>
          {!runEnded(run) && (
            <p>
              <button
                type="button"
                class="secondary"
                onClick={() => askCancel(run.workflow)}
                disabled={cancel.busy || run.cancelRequested}
              >
                Cancel run
              </button>
            </p>
          )}
          {cancel.message && (
            <p role="status" class={cancel.error ? "error" : undefined}>
              {cancel.message}
            </p>
          )}
          <h2 id="steps-heading">Steps</h2>
          <RunTimeline run={run} />
          <Timeline run={run} headingId="steps-heading" />
          <RunEnd run={run} Heading="h2" />
          <h2>Input</h2>
          <pre data-testid="run-input">{JSON.stringify(run.input, null, 2)}</pre>
          {run.logs.length > 0 && (
            <>
              <h2>Logs outside steps</h2>
              <pre>{run.logs.map((l) => `${l.at} ${l.level.padEnd(5)} ${l.line}`).join("\n")}</pre>
            </>
          )}
        </>
      )}
    </main>
  );
}

/**
 * A run the Actions page started, followed to its end as its own page follows it: its status and steps,
 * then its output or error.
 */
export function RunProgress(props: { client: ActuateClient; id: string }) {
  const { client, id } = props;
  const progress = usePoll(
    () => client.runs.get(id),
    [client, id],
    RUN_EVERY_MS,
    (run) => !runEnded(run),
  );
  const run = progress.data;
  return (
    <>
      <LoadFailure loaded={progress} />
      {run && (
        <>
          <p role="status">
            Run <ShortId id={id} href={hrefOf({ page: "runs", id })} label="Run" />:{" "}
            <StatusBadge status={run.status} testId="run-status" />
          </p>
          <h4 id="progress-steps-heading">Steps</h4>
          <Timeline run={run} headingId="progress-steps-heading" />
          <RunEnd run={run} Heading="h4" />
        </>
      )}
    </>
  );
}

/** How a run ended: its error, or its output (nothing while it goes on). */
function RunEnd(props: { run: Run; Heading: "h2" | "h4" }) {
  const { run, Heading } = props;
  return (
    <>
      {run.errorCode && (
        <>
          <Heading>Error</Heading>
          <p class="error">
            <code>{run.errorCode}</code> {run.errorMessage}
          </p>
        </>
      )}
      {run.status === "succeeded" && (
        <>
          <Heading>Output</Heading>
          <pre data-testid="run-output">{JSON.stringify(run.output, null, 2)}</pre>
        </>
      )}
    </>
  );
}

/**
 * The steps in the order the run reached them, each with a bar on one time scale (the run's start to its
 * end, or now): the bar is decoration, the text beside it says everything the bar does.
 */
function Timeline(props: { run: Run; headingId: string }) {
  const { run } = props;
  if (run.steps.length === 0) return <EmptyState title="No step has started yet." />;
  const now = Date.now();
  const start = Date.parse(run.createdAt);
  const total = Math.max(1, spanMs(run.createdAt, run.finishedAt, now));
  const percent = (ms: number) => `${Math.min(100, Math.max(0, (ms / total) * 100)).toFixed(2)}%`;
  return (
    <ol class="timeline" aria-labelledby={props.headingId}>
      {run.steps.map((step) => {
        const begun = step.startedAt ? Date.parse(step.startedAt) : now;
        const ended = step.finishedAt ? Date.parse(step.finishedAt) : now;
        return (
          <li key={step.name} data-testid={`step-${step.name}`} data-status={step.status}>
            <div class="step-head">
              <strong>{step.name}</strong> <span class="hint">{step.kind}</span> <StatusBadge status={step.status} />
              <span class="hint"> · {stepFacts(step, now)}</span>
            </div>
            <div class="bar-track" aria-hidden="true">
              <div
                class={`bar bar-${step.status}`}
                style={{ left: percent(begun - start), width: `max(4px, ${percent(ended - begun)})` }}
              />
            </div>
            {step.error && (
              <p class="error">
                {step.status === "retrying" ? "Last attempt: " : ""}
                {step.error}
              </p>
            )}
            {step.logs.length > 0 && (
              <details>
                <summary>
                  {step.logs.length} log line{step.logs.length === 1 ? "" : "s"}
                </summary>
                <pre>{step.logs.map((l) => `${l.at} ${l.level.padEnd(5)} ${l.line}`).join("\n")}</pre>
              </details>
            )}
          </li>
        );
      })}
    </ol>
  );
}

/** What a step's row says, in words: attempts, time taken, and what it waits for. */
function stepFacts(step: RunStep, now: number): string {
  const facts: string[] = [];
  if (step.kind === "step") facts.push(step.attempts === 1 ? "1 attempt" : `${step.attempts} attempts`);
  if (step.startedAt) {
    const took = duration(spanMs(step.startedAt, step.finishedAt, now));
    facts.push(step.finishedAt ? `took ${took}` : `${took} so far`);
  }
  if (step.wakeAt) {
    const verb = step.status === "retrying" ? "next attempt" : "wakes";
    facts.push(`${verb} ${when(step.wakeAt)} (in ${duration(Date.parse(step.wakeAt) - now)})`);
  }
  return facts.join(" · ");
}
