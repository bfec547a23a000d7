// No preact and no DOM here: test/unit/console-series.test.ts runs it under Bun.
import type { Execution } from "../client/index.ts";
import type { StatsBucket, StatsSeries } from "../wire/views.ts";

export type ExecutionStatus = Execution["status"];
export const EXECUTION_STATUSES: ExecutionStatus[] = ["queued", "running", "succeeded", "failed", "canceled"];

/** `GET /stats/series`: executions created in each [at, at + stepMs), by their status now. */
export type Series = StatsSeries;
export type SeriesBucket = StatsBucket;

/** The overview's two spans, and the bucket each is read in (60 and 96 points: readable at any width). */
export const SPANS = {
  "1h": { window: "1h", step: "1m", label: "Last hour", per: "per minute" },
  "24h": { window: "24h", step: "15m", label: "Last day", per: "per 15 minutes" },
} as const;
export type Span = keyof typeof SPANS;

export const seriesPath = (span: Span, action?: string) => {
  const { window, step } = SPANS[span];
  const search = new URLSearchParams({ window, step });
  if (action) search.set("action", action);
  return `/stats/series?${search}`;
};

export const countOf = (bucket: SeriesBucket, status: ExecutionStatus) => bucket.executions[status] ?? 0;
export const totalOf = (bucket: SeriesBucket) => EXECUTION_STATUSES.reduce((n, s) => n + countOf(bucket, s), 0);

/** Each status's count over the whole series: what the chart was given, summed. */
export function totalsOf(series: Series): Record<ExecutionStatus, number> {
  const totals = Object.fromEntries(EXECUTION_STATUSES.map((s) => [s, 0])) as Record<ExecutionStatus, number>;
  for (const bucket of series.buckets) for (const s of EXECUTION_STATUSES) totals[s] += countOf(bucket, s);
  return totals;
}

/** uPlot's x values: seconds since the epoch. */
export const secondsOf = (series: Series) => series.buckets.map((b) => Date.parse(b.at) / 1000);

/**
 * The stacked layers, top first: each status's line is its count plus those below it, and uPlot fills
 * each down to zero, so drawing the highest first leaves every band its own colour.
 */
export function stackedOf(series: Series): { status: ExecutionStatus; raw: number[]; stacked: number[] }[] {
  const below = series.buckets.map(() => 0);
  const layers = EXECUTION_STATUSES.map((status) => {
    const raw = series.buckets.map((b) => countOf(b, status));
    const stacked = raw.map((n, i) => {
      below[i] = (below[i] ?? 0) + n;
      return below[i] ?? 0;
    });
    return { status, raw, stacked };
  });
  return layers.reverse();
}

/** Failure rate as a percentage (null where nothing ended: a gap, not a zero). */
export const failurePercentOf = (series: Series) =>
  series.buckets.map((b) => (b.failureRate === null ? null : Math.round(b.failureRate * 1000) / 10));
