import type { RunRow, StepRow } from "../../store/rows.ts";
import type { RunListRow } from "../../store/runs.ts";
import { boundForList, jsonBytes, LIST_VALUE_BYTES, leaveOutLarge, textBytes } from "../executions.ts";

export { RUN_STATUSES, type RunStatus } from "../../store/statuses.ts";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The public shape of a run (`GET /runs/{id}`): output once succeeded, error fields once it failed or was canceled. */
export function toRunView(run: RunRow, steps: StepRow[]) {
  return { ...toRunSummary(run), steps: steps.map(toStepView) };
}

/** A run as lists show it: everything but its steps. */
export function toRunSummary(run: RunRow) {
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
    createdAt: iso(run.createdAt),
    updatedAt: iso(run.updatedAt),
    finishedAt: iso(run.finishedAt),
  };
}

type StepView = ReturnType<typeof toStepView>;

const toStepView = (step: StepRow) => ({
  name: step.name,
  kind: step.kind,
  status: step.status,
  attempts: step.attempts,
  output: step.status === "succeeded" ? step.output : null,
  error: step.error,
  startedAt: iso(step.startedAt),
  finishedAt: iso(step.finishedAt),
});

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
 */
export function toRunResource(run: RunRow, steps: StepRow[], statusUrl: string) {
  const summary = toRunSummary(run);
  const bounded = leaveOutLarge(summary, {
    input: jsonBytes(summary.input),
    output: jsonBytes(summary.output),
    errorMessage: textBytes(summary.errorMessage),
  });
  const shown: StepView[] = [];
  let budget = RESOURCE_STEP_BYTES;
  for (const step of steps) {
    const view = toStepView(step);
    const boundedStep = leaveOutLarge(view, { output: jsonBytes(view.output), error: textBytes(view.error) });
    budget -= jsonBytes(boundedStep);
    if (budget < 0) break;
    shown.push(boundedStep);
  }
  const truncated = shown.length < steps.length ? { stepsTruncated: { shown: shown.length, total: steps.length } } : {};
  return { ...bounded, steps: shown, ...truncated, statusUrl };
}
