/** @jsxImportSource preact */

import "uplot/dist/uPlot.min.css";
import { useEffect, useRef, useState } from "preact/hooks";
import type uPlot from "uplot";
import { type ActuateClient, ActuateError, type StatsSeries } from "../client/index.ts";
import { EXECUTION_STATUSES, type ExecutionStatus } from "../wire/statuses.ts";
import { LoadFailure } from "./alert.tsx";
import { failurePercentOf, SPANS, type Span, secondsOf, seriesQuery, stackedOf, totalOf, totalsOf } from "./series.ts";
import { usePoll } from "./use-poll.ts";

// Read again as often as a bucket of the span fills: sooner would redraw the same points.
const EVERY_MS: Record<Span, number> = { "1h": 15_000, "24h": 60_000 };
const HEIGHT = 180;
// Served apart from the console's bundle (src/http/console.ts): a variable, so the bundler leaves it be.
const UPLOT: string = "/chunk-uplot1632.js";

/** The series, or null for a caller `/stats/series` refuses (a user): the charts are then not shown. */
const seriesOrNull = async (client: ActuateClient, span: Span, action?: string) => {
  try {
    return await client.statsSeries(seriesQuery(span, action));
  } catch (error) {
    if (error instanceof ActuateError && error.code === "access_denied") return null;
    throw error;
  }
};

function useSeries(client: ActuateClient, span: Span, action?: string) {
  return usePoll(() => seriesOrNull(client, span, action), [client, span, action], EVERY_MS[span]);
}

/** The overview's charts: executions by status (stacked) and the failure rate, over an hour or a day. */
export function OverviewCharts(props: { client: ActuateClient }) {
  const [span, setSpan] = useState<Span>("1h");
  const series = useSeries(props.client, span);
  if (series.data === null && !series.error) return null;
  const data = series.data;
  return (
    <section aria-labelledby="charts-heading" class="charts">
      <h2 id="charts-heading">Over time</h2>
      <SpanToggle span={span} onChange={setSpan} />
      <LoadFailure loaded={series} />
      {data && (
        <>
          <StackedExecutions series={data} span={span} />
          <Chart
            title="Failure rate (%)"
            testId="failure-chart"
            data={[secondsOf(data), failurePercentOf(data)]}
            series={[{ label: "failure rate", stroke: colour("failed"), value: (_u, v) => percentText(v) }]}
            range={[0, 100]}
          />
          <SeriesTable series={data} caption={`Executions ${SPANS[span].per}, by status`} />
        </>
      )}
    </section>
  );
}

/** An action's charts: p50/p95 duration and throughput. */
export function ActionCharts(props: { client: ActuateClient; action: string }) {
  const [span, setSpan] = useState<Span>("1h");
  const series = useSeries(props.client, span, props.action);
  if (series.data === null && !series.error) return null;
  const data = series.data;
  const x = data ? secondsOf(data) : [];
  return (
    <section aria-labelledby="action-charts-heading" class="charts">
      <h3 id="action-charts-heading">Over time</h3>
      <SpanToggle span={span} onChange={setSpan} />
      <LoadFailure loaded={series} />
      {data && (
        <>
          <Chart
            title="Duration (ms)"
            testId="duration-chart"
            data={[
              x,
              data.buckets.map((b) => b.durationMs?.p50 ?? null),
              data.buckets.map((b) => b.durationMs?.p95 ?? null),
            ]}
            series={[
              { label: "p50", stroke: colour("succeeded") },
              { label: "p95", stroke: colour("running"), dash: [6, 4] },
            ]}
          />
          <Chart
            title={`Executions ${SPANS[span].per}`}
            testId="throughput-chart"
            attributes={{ "data-total": String(data.buckets.reduce((n, b) => n + totalOf(b), 0)) }}
            data={[x, data.buckets.map(totalOf)]}
            series={[{ label: "executions", stroke: colour("queued"), fill: fillOf("queued") }]}
          />
          <SeriesTable series={data} caption={`${props.action}: executions ${SPANS[span].per}`} durations />
        </>
      )}
    </section>
  );
}

function SpanToggle(props: { span: Span; onChange: (span: Span) => void }) {
  return (
    <fieldset class="span-toggle">
      <legend class="visually-hidden">Span</legend>
      {(Object.keys(SPANS) as Span[]).map((span) => (
        <button
          key={span}
          type="button"
          class="secondary"
          aria-pressed={props.span === span}
          onClick={() => props.onChange(span)}
        >
          {SPANS[span].label}
        </button>
      ))}
    </fieldset>
  );
}

function StackedExecutions(props: { series: StatsSeries; span: Span }) {
  const layers = stackedOf(props.series);
  const totals = totalsOf(props.series);
  const attributes = Object.fromEntries(EXECUTION_STATUSES.map((s) => [`data-total-${s}`, String(totals[s])]));
  return (
    <Chart
      title={`Executions ${SPANS[props.span].per}, by status`}
      testId="executions-chart"
      attributes={attributes}
      data={[secondsOf(props.series), ...layers.map((l) => l.stacked)]}
      series={layers.map((l) => ({
        label: l.status,
        stroke: colour(l.status),
        fill: fillOf(l.status),
        // The legend says each status's own count, not the stack's height.
        value: (_u: uPlot, _v: number | null, _s: number, i: number | null) => (i === null ? "" : String(l.raw[i])),
      }))}
    />
  );
}

/**
 * One uPlot chart, drawn once its module has loaded (a chunk of its own: the first paint does not wait
 * for it) and drawn again at the width of its box.
 */
function Chart(props: {
  title: string;
  testId: string;
  data: uPlot.AlignedData;
  series: uPlot.Series[];
  range?: [number, number];
  attributes?: Record<string, string>;
}) {
  const box = useRef<HTMLDivElement>(null);
  const [failed, setFailed] = useState<string | null>(null);
  const { data, series, range } = props;
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    let chart: uPlot | null = null;
    let gone = false;
    const resize = new ResizeObserver(() => chart?.setSize({ width: element.clientWidth, height: HEIGHT }));
    (import(UPLOT) as Promise<{ default: typeof uPlot }>).then(
      ({ default: UPlot }) => {
        if (gone) return;
        const options: uPlot.Options = {
          width: element.clientWidth,
          height: HEIGHT,
          series: [{}, ...series],
          scales: range ? { y: { range } } : {},
          axes: [{}, { size: 50 }],
          legend: { live: true },
        };
        chart = new UPlot(options, data, element);
        resize.observe(element);
      },
      (error: Error) => setFailed(`The chart did not load: ${error.message}`),
    );
    return () => {
      gone = true;
      resize.disconnect();
      chart?.destroy();
    };
  }, [data, series, range]);
  return (
    <figure class="chart" data-testid={props.testId} {...props.attributes}>
      <figcaption>{props.title}</figcaption>
      <div ref={box} class="chart-canvas" aria-hidden="true" />
      {failed && <p class="error">{failed}</p>}
    </figure>
  );
}

/** The numbers each chart was drawn from, for screen readers and anyone who wants them exact. */
function SeriesTable(props: { series: StatsSeries; caption: string; durations?: boolean }) {
  const time = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
  return (
    <details class="series-numbers">
      <summary>The numbers</summary>
      <table data-testid="series-table">
        <caption>{props.caption}</caption>
        <thead>
          <tr>
            <th scope="col">From</th>
            {EXECUTION_STATUSES.map((s) => (
              <th key={s} scope="col">
                {s}
              </th>
            ))}
            <th scope="col">Failure rate</th>
            {props.durations && <th scope="col">p50 / p95</th>}
          </tr>
        </thead>
        <tbody>
          {props.series.buckets.map((b) => (
            <tr key={b.at}>
              <th scope="row">
                <time dateTime={b.at}>{time.format(new Date(b.at))}</time>
              </th>
              {EXECUTION_STATUSES.map((s) => (
                <td key={s}>{b.executions[s] ?? 0}</td>
              ))}
              <td>{percentText(b.failureRate === null ? null : b.failureRate * 100)}</td>
              {props.durations && <td>{b.durationMs ? `${b.durationMs.p50} / ${b.durationMs.p95} ms` : "–"}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}

const percentText = (v: number | null) => (v === null ? "–" : `${v.toFixed(1)} %`);

// Canvas colours are strings, not CSS: read from console.css's custom properties, which follow the theme.
const colour = (status: ExecutionStatus) =>
  getComputedStyle(document.documentElement).getPropertyValue(`--chart-${status}`).trim() || "#0b5cad";
const fillOf = (status: ExecutionStatus) => `color-mix(in srgb, ${colour(status)} 55%, transparent)`;
