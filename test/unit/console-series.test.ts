import { describe, expect, test } from "bun:test";
import type { RunStep, StatsSeries } from "../../src/client/index.ts";
import { failurePercentOf, seriesQuery, stackedOf, totalsOf } from "../../src/console/series.ts";
import { timelineOf } from "../../src/console/timeline-layout.ts";

const none = { queued: 0, running: 0, succeeded: 0, failed: 0, canceled: 0 };
const series: StatsSeries = {
  window: { since: "2026-11-29T10:00:00.000Z", until: "2026-11-29T10:02:00.000Z" },
  stepMs: 60_000,
  action: null,
  buckets: [
    {
      at: "2026-11-29T10:00:00.000Z",
      executions: { ...none, succeeded: 3, failed: 1 },
      failureRate: 0.25,
      durationMs: null,
    },
    { at: "2026-11-29T10:01:00.000Z", executions: none, failureRate: null, durationMs: null },
  ],
};

describe("the console's charts, from /stats/series", () => {
  test("a span asks for its window and step, and the action when given", () => {
    expect(seriesQuery("1h")).toEqual({ window: "1h", step: "1m" });
    expect(seriesQuery("24h", "todos.add")).toEqual({ window: "24h", step: "15m", action: "todos.add" });
  });

  test("layers stack in status order, drawn top first; totals are each status's sum", () => {
    const layers = stackedOf(series);
    expect(layers.map((l) => l.status)).toEqual(["canceled", "failed", "succeeded", "running", "queued"]);
    expect(layers[0]?.stacked).toEqual([4, 0]);
    expect(layers[1]).toEqual({ status: "failed", raw: [1, 0], stacked: [4, 0] });
    expect(layers[2]).toEqual({ status: "succeeded", raw: [3, 0], stacked: [3, 0] });
    expect(totalsOf(series)).toEqual({ queued: 0, running: 0, succeeded: 3, failed: 1, canceled: 0 });
    // Nothing ended in a bucket: a gap in the line, not 0 %.
    expect(failurePercentOf(series)).toEqual([25, null]);
  });
});

describe("a run's timeline", () => {
  const step = (over: Partial<RunStep> & { name: string }): RunStep => ({
    kind: "step",
    status: "succeeded",
    attempts: 1,
    output: null,
    error: null,
    startedAt: null,
    finishedAt: null,
    wakeAt: null,
    logs: [],
    ...over,
  });
  const at = (ms: number) => new Date(Date.parse("2026-11-29T10:00:00.000Z") + ms).toISOString();

  test("attempts are bars, sleeps and backoffs are waits, on the run's time axis", () => {
    const layout = timelineOf(
      {
        createdAt: at(0),
        finishedAt: null,
        steps: [
          step({ name: "first", startedAt: at(100), finishedAt: at(600) }),
          step({ name: "nap", kind: "sleep", status: "sleeping", startedAt: at(600), wakeAt: at(5_000) }),
          step({ name: "flaky", status: "retrying", attempts: 2, startedAt: at(700), wakeAt: at(3_000) }),
          step({ name: "later", status: "running" }),
        ],
      },
      Date.parse(at(2_000)),
    );
    expect(layout.totalMs).toBe(5_000);
    expect(layout.steps.map((s) => [s.name, s.busy, s.wait])).toEqual([
      ["first", { from: 100, to: 600 }, null],
      ["nap", null, { from: 600, to: 5_000 }],
      ["flaky", { from: 700, to: 700 }, { from: 700, to: 3_000 }],
      ["later", null, null],
    ]);
    expect(layout.steps[2]?.summary).toBe(
      "flaky (step): retrying, 2 attempts, from 700 ms to 700 ms, waits from 700 ms to 3.0 s",
    );
    expect(layout.steps[3]?.summary).toBe("later (step): running, 1 attempt, not started");
  });

  test("a finished sleep is a wait from its start to its end", () => {
    const layout = timelineOf(
      {
        createdAt: at(0),
        finishedAt: at(1_000),
        steps: [step({ name: "nap", kind: "sleep", startedAt: at(0), finishedAt: at(900) })],
      },
      Date.now(),
    );
    expect(layout.steps[0]?.wait).toEqual({ from: 0, to: 900 });
    expect(layout.totalMs).toBe(1_000);
  });
});
