// No preact and no DOM here: test/unit/console-series.test.ts runs it under Bun.
import type { StatsBucket, StatsSeries } from "../client/index.ts";
import { EXECUTION_STATUSES, type ExecutionStatus } from "../wire/statuses.ts";

/** The overview's two spans, and the bucket each is read in (60 and 96 points: readable at any width). */
export const SPANS = {
  "1h": { window: "1h", step: "1m", label: "Last hour", per: "per minute" },
  "24h": { window: "24h", step: "15m", label: "Last day", per: "per 15 minutes" },
} as const;
export type Span = keyof typeof SPANS;

/** What `client.statsSeries` is asked for a span (of one action when named). */
export const seriesQuery = (span: Span, action?: string) => {
  const { window, step } = SPANS[span];
  return action ? { window, step, action } : { window, step };
};

export const countOf = (bucket: StatsBucket, status: ExecutionStatus) => bucket.executions[status] ?? 0;
export const totalOf = (bucket: StatsBucket) => EXECUTION_STATUSES.reduce((n, s) => n + countOf(bucket, s), 0);

/** Each status's count over the whole series: what the chart was given, summed. */
export function totalsOf(series: StatsSeries): Record<ExecutionStatus, number> {
  const totals = Object.fromEntries(EXECUTION_STATUSES.map((s) => [s, 0])) as Record<ExecutionStatus, number>;
  for (const bucket of series.buckets) for (const s of EXECUTION_STATUSES) totals[s] += countOf(bucket, s);
  return totals;
}

/** uPlot's x values: seconds since the epoch. */
export const secondsOf = (series: StatsSeries) => series.buckets.map((b) => Date.parse(b.at) / 1000);

/**
 * The stacked layers, top first: each status's line is its count plus those below it, and uPlot fills
 * each down to zero, so drawing the highest first leaves every band its own colour.
 */
export function stackedOf(series: StatsSeries): { status: ExecutionStatus; raw: number[]; stacked: number[] }[] {
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
export const failurePercentOf = (series: StatsSeries) =>
  series.buckets.map((b) => (b.failureRate === null ? null : Math.round(b.failureRate * 1000) / 10));
