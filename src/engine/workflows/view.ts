import type { RunRow, StepRow } from "../../store/rows.ts";
import type { RunListRow } from "../../store/runs.ts";
import { boundForList } from "../executions.ts";

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
