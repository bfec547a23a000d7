import type { RunStatus } from "../wire/statuses.ts";

/** The closed sets of values some columns hold (the schemas type those columns with them): the API's own. */
export * from "../wire/statuses.ts";

export const isTerminal = (status: string) => status === "succeeded" || status === "failed" || status === "canceled";
/** A run ends as an execution does (the same three statuses). */
export const isRunTerminal: (status: RunStatus) => boolean = isTerminal;
