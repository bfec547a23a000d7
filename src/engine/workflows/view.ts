import type { RunListRow, RunRow, StepRow } from "../../store/types.ts";
import { LIST_VALUE_BYTES } from "../executions.ts";

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

/** A run as `GET /runs` lists it: values over LIST_VALUE_BYTES are left out, with their size (`GET /runs/{id}` has them). */
export function toRunListItem(run: RunListRow) {
  const { input, output, errorMessage, ...summary } = toRunSummary(run);
  return {
    ...summary,
    ...(run.inputBytes > LIST_VALUE_BYTES ? { inputTruncated: { bytes: run.inputBytes } } : { input }),
    ...(run.outputBytes > LIST_VALUE_BYTES ? { outputTruncated: { bytes: run.outputBytes } } : { output }),
    ...(run.errorMessageBytes > LIST_VALUE_BYTES
      ? { errorMessageTruncated: { bytes: run.errorMessageBytes } }
      : { errorMessage }),
  };
}
