import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { PublicError } from "../lib/errors.ts";
import { uuidOrNull } from "../lib/ids.ts";
import { isObject, iso } from "../lib/values.ts";
import type { Principal } from "../sdk/index.ts";
import { EXECUTION_META, jsonResult, refusal, type ToolDeps } from "./tools.ts";

/** The Tasks extension (2026-07-28): a workflow tool call answers a task the client polls. */
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";
/** How often a client is asked to poll `tasks/get`: a workflow's steps take at least this long to matter. */
export const TASK_POLL_MS = 1_000;

/** Whether a request's `clientCapabilities` declare the Tasks extension (only then may it get a task). */
export const declaresTasks = (capabilities: Record<string, unknown>): boolean =>
  isObject(capabilities.extensions) && isObject(capabilities.extensions[TASKS_EXTENSION]);

type TaskStatus = "working" | "completed" | "failed" | "cancelled";

/** A task, as the extension names its fields: the run's id is the task's (unguessable, and bound to its caller). */
const taskFields = (id: string, status: TaskStatus, createdAt: string, updatedAt: string) => ({
  taskId: id,
  status,
  createdAt,
  lastUpdatedAt: updatedAt,
  // The run is kept as long as the environment keeps runs.
  ttlMs: null,
  pollIntervalMs: TASK_POLL_MS,
});

/** What `tools/call` answers instead of the admission when the client declared the extension. */
export const createdTask = (runId: string, createdAt: string) => ({
  resultType: "task",
  ...taskFields(runId, "working", createdAt, createdAt),
});

/**
 * `tasks/get`: the run (or the function's execution) as a task. One that ended answers `completed` with
 * what the call would have returned synchronously: its output, or a tool error when it failed (the
 * extension keeps `failed` for JSON-RPC errors, and a failing action is a tool error). Null: no such task
 * for this caller (another caller's is as absent as a missing one).
 */
export async function getTask(deps: ToolDeps, principal: Principal, taskId: string) {
  const found = await visibleTask(deps, principal, taskId);
  if (!found) return null;
  const { id, status, createdAt, updatedAt } = found;
  const fields = taskFields(id, statusOf(status), createdAt, updatedAt);
  if (status === "succeeded" || status === "failed") return { ...fields, result: taskResult(deps, found) };
  if (status === "canceled" && found.errorMessage) return { ...fields, statusMessage: found.errorMessage };
  return fields;
}

/**
 * `tasks/cancel`: a run is canceled as `POST /runs/{id}/cancel` does (one that has already ended is
 * acknowledged: the extension makes cancel idempotent). A function's execution has no cancel; the
 * extension's cancel is cooperative, so it is acknowledged and runs to its end. False: no such task.
 */
export async function cancelTask(deps: ToolDeps, principal: Principal, taskId: string): Promise<boolean> {
  const found = await visibleTask(deps, principal, taskId);
  if (!found) return false;
  if (found.kind !== "run") return true;
  try {
    await deps.engine.runs.cancel(principal, found.id);
  } catch (error) {
    if (!(error instanceof PublicError && error.code === "run_not_cancelable")) throw error;
  }
  return true;
}

/** Whether the task exists for this caller (`tasks/update` has nothing to update: nothing ever asks for input). */
export async function taskExists(deps: ToolDeps, principal: Principal, taskId: string): Promise<boolean> {
  return (await visibleTask(deps, principal, taskId)) !== null;
}

/** What a task is made of: a workflow run, or a function's execution (a run's id is its execution's). */
interface TaskSource {
  kind: "run" | "execution";
  id: string;
  status: string;
  output: unknown;
  errorCode: string | null;
  errorMessage: string | null;
  createdAt: string;
  updatedAt: string;
}

async function visibleTask(deps: ToolDeps, principal: Principal, taskId: string): Promise<TaskSource | null> {
  const id = uuidOrNull(taskId);
  if (id === null) return null;
  const run = await absentAs(null, "run_not_found", () => deps.engine.runs.getRow(principal, id));
  if (run) return { ...run, kind: "run", createdAt: iso(run.createdAt), updatedAt: iso(run.updatedAt) };
  const row = await absentAs(null, "execution_not_found", () => deps.engine.executions.get(principal, id));
  if (!row) return null;
  const updated = row.finishedAt ?? row.startedAt ?? row.createdAt;
  return { ...row, kind: "execution", createdAt: iso(row.createdAt), updatedAt: iso(updated) };
}

async function absentAs<T, F>(fallback: F, code: string, read: () => Promise<T>): Promise<T | F> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof PublicError && error.code === code) return fallback;
    throw error;
  }
}

const statusOf = (status: string): TaskStatus =>
  status === "succeeded" || status === "failed" ? "completed" : status === "canceled" ? "cancelled" : "working";

function taskResult(deps: ToolDeps, task: TaskSource): CallToolResult {
  const url = task.kind === "run" ? deps.runUrl(task.id) : deps.executionUrl(task.id);
  const execution = { id: task.id, requestId: null, status: task.status, url };
  if (task.status === "failed") {
    return refusal(task.errorCode ?? "action_failed", task.errorMessage ?? "the action failed", {}, execution);
  }
  return { ...jsonResult(task.output), _meta: { [EXECUTION_META]: execution } };
}
