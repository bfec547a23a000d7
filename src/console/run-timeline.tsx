/** @jsxImportSource preact */

import type { Run } from "../client/index.ts";
import { duration } from "./format.ts";
import { timelineOf } from "./timeline-layout.ts";

const ROW = 22;
const LABEL = 140;
const WIDTH = 720;

/**
 * A run's steps on one time axis (ms from the run's start): a row per step, a solid bar for its latest
 * attempt, a dashed one for what it waits out (a sleep, a retry's backoff). Each bar has a title, and a
 * table says the same for screen readers (the drawing is hidden from them).
 */
export function RunTimeline(props: { run: Run; now?: number }) {
  const layout = timelineOf(props.run, props.now ?? Date.now());
  if (layout.steps.length === 0) return null;
  const scale = (ms: number) => LABEL + (ms / layout.totalMs) * (WIDTH - LABEL - 4);
  const height = layout.steps.length * ROW + 18;
  return (
    <figure class="run-timeline" data-testid="run-timeline" data-total-ms={layout.totalMs}>
      <figcaption class="visually-hidden">Steps on a time axis</figcaption>
      <svg class="timeline-svg" viewBox={`0 0 ${WIDTH} ${height}`} aria-hidden="true" focusable="false">
        {layout.steps.map((step, i) => {
          const y = i * ROW;
          return (
            <g key={step.name} data-testid={`timeline-${step.name}`} data-status={step.status}>
              <title>{step.summary}</title>
              <rect class="lane" x={LABEL} y={y + 2} width={WIDTH - LABEL} height={ROW - 4} />
              <text x={0} y={y + ROW / 2 + 4}>
                {step.name.length > 18 ? `${step.name.slice(0, 17)}…` : step.name}
              </text>
              {step.busy && (
                <Bar
                  class={`span-${step.status === "succeeded" || step.status === "failed" ? step.status : "running"}`}
                  span={step.busy}
                  scale={scale}
                  y={y}
                  inset={5}
                  title={step.summary}
                />
              )}
              {step.wait && (
                <Bar class="span-wait" span={step.wait} scale={scale} y={y} inset={6} title={step.summary} />
              )}
            </g>
          );
        })}
        <text x={LABEL} y={height - 2}>
          0
        </text>
        <text x={WIDTH - 4} y={height - 2} text-anchor="end">
          {duration(layout.totalMs)}
        </text>
      </svg>
      {/* Hidden by its box: a table is never narrower than its cells, whatever its own width says. */}
      <div class="visually-hidden">
        <table data-testid="timeline-table">
          <caption>Steps on the run's time axis, from its start</caption>
          <thead>
            <tr>
              <th scope="col">Step</th>
              <th scope="col">What happened</th>
            </tr>
          </thead>
          <tbody>
            {layout.steps.map((step) => (
              <tr key={step.name}>
                <th scope="row">{step.name}</th>
                <td>{step.summary}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}

/** One bar of a step's row, from `span.from` to `span.to`, `inset` from the row's edges; at least 3 px wide. */
function Bar(props: {
  class: string;
  span: { from: number; to: number };
  scale: (ms: number) => number;
  y: number;
  inset: number;
  title: string;
}) {
  const { span, scale } = props;
  return (
    <rect
      class={props.class}
      x={scale(span.from)}
      y={props.y + props.inset}
      width={Math.max(3, scale(span.to) - scale(span.from))}
      height={ROW - 2 * props.inset}
    >
      <title>{props.title}</title>
    </rect>
  );
}
