/** The closed sets of values some columns hold (the schemas type those columns with them). */

export type ExecutionStatus = "queued" | "running" | "succeeded" | "failed" | "canceled";
export const EXECUTION_STATUSES: readonly ExecutionStatus[] = ["queued", "running", "succeeded", "failed", "canceled"];
export const isTerminal = (status: string) => status === "succeeded" || status === "failed" || status === "canceled";

export type ActionKind = "function" | "workflow";
export type PrincipalKind = "user" | "service";

export type RunStatus = "queued" | "running" | "sleeping" | "succeeded" | "failed" | "canceled";
export const RUN_STATUSES: readonly RunStatus[] = ["queued", "running", "sleeping", "succeeded", "failed", "canceled"];
export const isRunTerminal = (status: RunStatus) =>
  status === "succeeded" || status === "failed" || status === "canceled";

/**
 * `retrying`: an attempt failed and another is due; `sleeping`: a durable timer that has not fired;
 * `canceled`: the run was canceled while the step ran or waited.
 */
export type StepStatus = "running" | "retrying" | "sleeping" | "succeeded" | "failed" | "canceled";
export type StepKind = "step" | "sleep";

/** The level of a line an execution logged: `ctx.log` is `info`, and a failed handler's stack is `error`. */
export type LogLevel = "info" | "warn" | "error";
export const LOG_LEVELS: readonly LogLevel[] = ["info", "warn", "error"];
/** A delayed invocation: `pending` until due, then `started` (its execution is made) or `canceled` before. */
export type ScheduledStatus = "pending" | "started" | "canceled";
export const SCHEDULED_STATUSES: readonly ScheduledStatus[] = ["pending", "started", "canceled"];
