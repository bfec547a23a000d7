import type { RunStatus } from "../wire/statuses.ts";
import type { Page, Run, RunSummary } from "../wire/views.ts";
import { retried, searchOf, type Transport } from "./http.ts";

/** `client.runs`: the caller's workflow runs, one with its steps, and canceling one. */
export const runsResource = (transport: Transport) => ({
  list: (filter: { workflow?: string; status?: RunStatus; limit?: number; cursor?: string } = {}) =>
    retried<Page<RunSummary>>(transport, "GET", `/runs${searchOf(filter)}`),
  get: (id: string) => retried<Run>(transport, "GET", `/runs/${id}`),
  cancel: (id: string) => retried<Run>(transport, "POST", `/runs/${id}/cancel`),
});
