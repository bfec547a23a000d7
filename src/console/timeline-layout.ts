// No preact and no DOM here: test/unit/console-series.test.ts runs it under Bun.
import type { RunStep } from "../client/index.ts";
import { duration } from "./format.ts";

/** A step on the run's time axis: ms from the run's start. */
export interface StepSpan {
  name: string;
  kind: RunStep["kind"];
  status: RunStep["status"];
  attempts: number;
  /** Its latest attempt (or its sleep), started to ended (or now); null: not started. */
  busy: { from: number; to: number } | null;
  /** What it waits for after that: a sleep's end, a retry's backoff (to `wakeAt`). */
  wait: { from: number; to: number } | null;
  /** Everything the bars say, in words: each bar's title and the table's row. */
  summary: string;
}

export interface TimelineLayout {
  /** The axis: the run's start to the last thing on it (its end, now, or a wake still to come). */
  totalMs: number;
  steps: StepSpan[];
}

export function timelineOf(run: { createdAt: string; finishedAt: string | null; steps: RunStep[] }, now: number) {
  const start = Date.parse(run.createdAt);
  const at = (iso: string | null) => (iso ? Date.parse(iso) - start : null);
  const nowMs = (run.finishedAt ? Date.parse(run.finishedAt) : now) - start;
  const steps = run.steps.map((step): StepSpan => {
    const from = at(step.startedAt);
    const ended = at(step.finishedAt);
    const wakes = at(step.wakeAt);
    // A sleep is all waiting; a retrying step has run its attempt and waits out the backoff.
    const sleeping = step.kind === "sleep" || step.status === "sleeping";
    const busyTo = ended ?? (step.status === "retrying" ? from : nowMs);
    const busy = from === null || sleeping ? null : { from, to: Math.max(from, busyTo ?? from) };
    const wait =
      wakes !== null && from !== null && !step.finishedAt
        ? { from: sleeping ? from : (busy?.to ?? from), to: wakes }
        : sleeping && from !== null
          ? { from, to: ended ?? nowMs }
          : null;
    return { name: step.name, kind: step.kind, status: step.status, attempts: step.attempts, busy, wait, summary: "" };
  });
  const totalMs = Math.max(1, nowMs, ...steps.flatMap((s) => [s.busy?.to ?? 0, s.wait?.to ?? 0]));
  for (const s of steps) s.summary = summaryOf(s);
  return { totalMs, steps } satisfies TimelineLayout;
}

function summaryOf(step: StepSpan): string {
  const parts = [`${step.name} (${step.kind}): ${step.status}`];
  if (step.kind === "step") parts.push(step.attempts === 1 ? "1 attempt" : `${step.attempts} attempts`);
  if (step.busy) parts.push(`from ${duration(step.busy.from)} to ${duration(step.busy.to)}`);
  if (step.wait) parts.push(`waits from ${duration(step.wait.from)} to ${duration(step.wait.to)}`);
  if (!step.busy && !step.wait) parts.push("not started");
  return parts.join(", ");
}
