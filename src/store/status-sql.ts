import { ACTIVE_RUN_STATUSES, OPEN_STEP_STATUSES } from "./runs.ts";

/**
 * `('a', 'b')`: a closed set of statuses written into a hand-written statement's text (they are the
 * schema's identifiers, never input), so that the planner matches the partial indexes built on them.
 */
const sqlSet = (statuses: readonly string[]) => `(${statuses.map((status) => `'${status}'`).join(", ")})`;

/** A run that has not ended (what the due index covers): `status in ('queued', 'running', 'sleeping')`. */
export const RUN_WAITING = `status in ${sqlSet(ACTIVE_RUN_STATUSES)}`;

/** The statuses of a step that has not ended, as `in ${OPEN_STEP}` reads them. */
export const OPEN_STEP = sqlSet(OPEN_STEP_STATUSES);
