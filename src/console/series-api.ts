import type { Execution } from "../client/index.ts";
import { readJson } from "./console-fetch.ts";
import { type Series, type Span, seriesPath } from "./series.ts";

/** `GET /stats/series` (service keys; a user is refused with 403). */
export const readSeries = (span: Span, action?: string) => readJson<Series>(seriesPath(span, action));

/** The caller's execution for a request id, `GET /executions/requests/{requestId}`. */
export const executionByRequest = (requestId: string) =>
  readJson<Execution>(`/executions/requests/${encodeURIComponent(requestId)}`);
