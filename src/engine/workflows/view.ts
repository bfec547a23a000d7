import { iso } from "../../lib/values.ts";
import type { Principal } from "../../sdk/index.ts";
import type { LogRow, RunRow, StepRow } from "../../store/rows.ts";
import { BOUNDED_STEP_VALUES, type BoundedStep, type RunListRow } from "../../store/runs.ts";
import type { Run, RunStep, RunSummary } from "../../wire/views.ts";
import { type LogLineView, toLogLineView } from "../execution-log.ts";
import { boundForList, jsonBytes, LIST_VALUE_BYTES, leaveOutLarge } from "../executions.ts";

export { RUN_STATUSES, type RunStatus } from "../../store/statuses.ts";

/**
 * The public shape of a run (`GET /runs/{id}`): output once succeeded, error fields once it failed or was
 * canceled; each step with the lines its code logged, and the run's `logs` those logged outside steps.
 */
export function toRunView(run: RunRow, steps: StepRow[], logs: LogRow[]): Run {
  const byStep = logsByStep(logs);
  return {
    ...toRunSummary(run),
    logs: byStep.get(null) ?? [],
    steps: steps.map((step) => toStepView(step, byStep.get(step.name) ?? [])),
  };
}

/** The run's view with who holds its lease, for a service key (an instance id names a host; users see none). */
export function withLease(view: Run, run: Pick<RunRow, "leaseOwner" | "leaseExpiresAt">, principal: Principal): Run {
  if (principal.kind !== "service") return view;
  return { ...view, leaseHolder: run.leaseOwner, leaseExpiresAt: iso(run.leaseExpiresAt) };
}

/** Lines by the step that logged them (null: outside steps); a step's line does not repeat its name. */
function logsByStep(logs: LogRow[]): Map<string | null, Omit<LogLineView, "step">[]> {
  const byStep = new Map<string | null, Omit<LogLineView, "step">[]>();
  for (const row of logs) {
    const { step: _, ...view } = toLogLineView(row);
    const lines = byStep.get(row.step) ?? [];
    lines.push(view);
    byStep.set(row.step, lines);
  }
  return byStep;
}

/** A run as lists show it: everything but its steps. */
export function toRunSummary(run: RunRow): RunSummary {
  return {
    id: run.id,
    executionId: run.id,
    workflow: run.workflow,
    releaseVersion: run.releaseVersion,
    status: run.status,
    cancelRequested: run.cancelRequested,
    input: run.input,
    output: run.status === "succeeded" ? run.output : null,
    errorCode: run.errorCode,
    errorMessage: run.errorMessage,
    createdAt: new Date(run.createdAt).toISOString(),
    updatedAt: new Date(run.updatedAt).toISOString(),
    finishedAt: iso(run.finishedAt),
  };
}

const toStepView = (step: StepRow, logs: Omit<LogLineView, "step">[]): RunStep => ({
  name: step.name,
  kind: step.kind,
  status: step.status,
  attempts: step.attempts,
  output: step.status === "succeeded" ? step.output : null,
  error: step.error,
  startedAt: iso(step.startedAt),
  finishedAt: iso(step.finishedAt),
  wakeAt: iso(wakeAtOf(step)),
  logs,
});

/** When a waiting step goes on: a sleep's end, a backing-off step's next attempt (both kept in its row). */
function wakeAtOf(step: StepRow): number | null {
  if (step.status !== "sleeping" && step.status !== "retrying") return null;
  return (step.output as { until?: number } | null)?.until ?? null;
}

/** A run as `GET /runs` lists it (values too large to list left out, with their size). */
export const toRunListItem = (run: RunListRow) => boundForList(toRunSummary(run), run);

/**
 * How many bytes of steps the MCP run resource shows: with each value bounded a step takes at most
 * ~2 × LIST_VALUE_BYTES, so this is at least 32 steps; later ones are counted, not shown.
 */
export const RESOURCE_STEP_BYTES = 64 * LIST_VALUE_BYTES;

/**
 * A run as the MCP resource shows it to an agent, bounded like a list item: the run's input, output and
 * error message and each step's output and error over LIST_VALUE_BYTES are left out with their size
 * (`outputTruncated: { bytes }`, …), steps past RESOURCE_STEP_BYTES are left out and counted
 * (`stepsTruncated: { shown, total }`), and `statusUrl` (`GET /runs/{id}`) answers everything whole.
 * Log lines are bounded the same way: a step's (or the run's) `logs` over LIST_VALUE_BYTES are left out
 * as `logsTruncated: { bytes }`; `GET /executions/{id}/logs` pages through them.
 */
export function toRunResource(run: RunListRow, steps: BoundedStep[], logs: LogRow[], statusUrl: string) {
  const byStep = logsByStep(logs);
  const summary = { ...toRunSummary(run), logs: byStep.get(null) ?? [] };
  const bounded = leaveOutLarge(boundForList(summary, run), [["logs", jsonBytes(summary.logs)]]);
  const shown: RunStep[] = [];
  let budget = RESOURCE_STEP_BYTES;
  for (const step of steps) {
    const view = toStepView(step, byStep.get(step.name) ?? []);
    const values = leaveOutLarge(
      view,
      BOUNDED_STEP_VALUES.map((name) => [name, step[`${name}Bytes`]]),
    );
    const boundedStep = leaveOutLarge(values, [["logs", jsonBytes(view.logs)]]);
    budget -= jsonBytes(boundedStep);
    if (budget < 0) break;
    shown.push(boundedStep);
  }
  const truncated = shown.length < steps.length ? { stepsTruncated: { shown: shown.length, total: steps.length } } : {};
  return { ...bounded, steps: shown, ...truncated, statusUrl };
}
