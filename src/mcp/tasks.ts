import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { PublicError } from "../lib/errors.ts";
import { uuidOrNull } from "../lib/ids.ts";
import type { Principal } from "../sdk/index.ts";
import type { RunRow } from "../store/rows.ts";
import { isObject } from "./arguments.ts";
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
 * `tasks/get`: the run as a task. A run that ended answers `completed` with what the call would have
 * returned synchronously: its output, or a tool error for a failed run (the extension keeps `failed` for
 * JSON-RPC errors, and a failing workflow is a tool error like a failing function). Null: no such task
 * for this caller (another caller's run is as absent as a missing one).
 */
export async function getTask(deps: ToolDeps, principal: Principal, taskId: string) {
  const run = await visibleRun(deps, principal, taskId);
  if (!run) return null;
  const fields = taskFields(run.id, statusOf(run), iso(run.createdAt), iso(run.updatedAt));
  if (run.status === "canceled") {
    return { ...fields, ...(run.errorMessage ? { statusMessage: run.errorMessage } : {}) };
  }
  if (run.status === "succeeded" || run.status === "failed") return { ...fields, result: runResult(deps, run) };
  return fields;
}

/** `tasks/cancel`: our run cancel. Ending a task that has already ended changes nothing (acknowledged). Null: no such task. */
export async function cancelTask(deps: ToolDeps, principal: Principal, taskId: string): Promise<boolean> {
  const run = await visibleRun(deps, principal, taskId);
  if (!run) return false;
  try {
    await deps.engine.cancelRun(principal, run.id);
  } catch (error) {
    if (!(error instanceof PublicError && error.code === "run_not_cancelable")) throw error;
  }
  return true;
}

/** Whether the task exists for this caller (`tasks/update` has nothing to update: runs never ask for input). */
export async function taskExists(deps: ToolDeps, principal: Principal, taskId: string): Promise<boolean> {
  return (await visibleRun(deps, principal, taskId)) !== null;
}

async function visibleRun(deps: ToolDeps, principal: Principal, taskId: string): Promise<RunRow | null> {
  const id = uuidOrNull(taskId);
  if (id === null) return null;
  try {
    return (await deps.engine.run(principal, id)).run;
  } catch (error) {
    if (error instanceof PublicError && error.code === "run_not_found") return null;
    throw error;
  }
}

const statusOf = (run: RunRow): TaskStatus =>
  run.status === "succeeded" || run.status === "failed"
    ? "completed"
    : run.status === "canceled"
      ? "cancelled"
      : "working";

function runResult(deps: ToolDeps, run: RunRow): CallToolResult {
  const execution = { id: run.id, requestId: null, status: run.status, url: deps.runUrl(run.id) };
  if (run.status === "failed") {
    return refusal(run.errorCode ?? "action_failed", run.errorMessage ?? "the workflow failed", {}, execution);
  }
  return { ...jsonResult(run.output), _meta: { [EXECUTION_META]: execution } };
}

const iso = (ms: number | Date) => new Date(ms).toISOString();
