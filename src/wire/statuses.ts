/**
 * The closed sets of values the API answers (and the columns that hold them): each array is the one
 * list, its union type is derived from it.
 */

export const EXECUTION_STATUSES = ["queued", "running", "succeeded", "failed", "canceled"] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];

export const RUN_STATUSES = ["queued", "running", "sleeping", "succeeded", "failed", "canceled"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/**
 * `retrying`: an attempt failed and another is due; `sleeping`: a durable timer that has not fired;
 * `canceled`: the run was canceled while the step ran or waited.
 */
export const STEP_STATUSES = ["running", "retrying", "sleeping", "succeeded", "failed", "canceled"] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

export const STEP_KINDS = ["step", "sleep"] as const;
export type StepKind = (typeof STEP_KINDS)[number];

/** The level of a line an execution logged: `ctx.log` is `info`, and a failed handler's stack is `error`. */
export const LOG_LEVELS = ["info", "warn", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A delayed invocation: `pending` until due, then `started` (its execution is made) or `canceled` before. */
export const SCHEDULED_STATUSES = ["pending", "started", "canceled"] as const;
export type ScheduledStatus = (typeof SCHEDULED_STATUSES)[number];

export const ACTION_KINDS = ["function", "workflow"] as const;
export type ActionKind = (typeof ACTION_KINDS)[number];

export const PRINCIPAL_KINDS = ["user", "service"] as const;
export type PrincipalKind = (typeof PRINCIPAL_KINDS)[number];

/** Who may run an action, as its contract shows it: a rule function shows as `"rule"`. */
export const ACCESS_KINDS = ["authenticated", "service", "rule"] as const;
export type AccessKind = (typeof ACCESS_KINDS)[number];
