import type { RunStatus } from "../wire/statuses.ts";
import type { Page, Run, RunSummary } from "../wire/views.ts";
import type { ActuateError } from "./errors.ts";
import { retried, searchOf, type Transport } from "./http.ts";
import type { LiveSession } from "./live.ts";

/** `client.runs`: the caller's workflow runs, one with its steps, canceling one, and the list live. */
export const runsResource = (transport: Transport, live: LiveSession) => ({
  list: (filter: { workflow?: string; status?: RunStatus; limit?: number; cursor?: string } = {}) =>
    retried<Page<RunSummary>>(transport, "GET", `/runs${searchOf(filter)}`),
  get: (id: string) => retried<Run>(transport, "GET", `/runs/${id}`),
  cancel: (id: string) => retried<Run>(transport, "POST", `/runs/${id}/cancel`),
  /**
   * Each new or changed run the caller may see (as `list` shows it) as it happens, and with a `status`
   * filter the ids of those that moved to another status (`left`); answers how to stop.
   */
  subscribe: (
    filter: { workflow?: string; status?: RunStatus },
    onChange: (runs: RunSummary[], left: string[]) => void,
    onError?: (error: ActuateError) => void,
  ) => live.connection().watchList("runs", filter, onChange as (items: unknown[], left: string[]) => void, onError),
});
