import { iso } from "../../lib/values.ts";
import type { LoadedRelease } from "../../release/load.ts";
import { type ScheduleManifest, scheduleManifest } from "../../release/schedules.ts";
import type { ScheduledRow, ScheduleTickRow } from "../../store/rows.ts";
import type { ScheduledInvocation } from "../../wire/views.ts";

export { SCHEDULED_STATUSES, type ScheduledStatus } from "../../store/statuses.ts";

export interface ScheduleView extends ScheduleManifest {
  /** The last tick handled (run or skipped by its catch-up policy), ISO 8601; null before the first. */
  lastTickAt: string | null;
  /** The next tick after now and after the last one handled; null when the pattern has no more. */
  nextTickAt: string | null;
}

/** The active release's schedules with where each stands (`GET /schedules`). */
export function scheduleViews(release: LoadedRelease | null, ticks: ScheduleTickRow[], now: number): ScheduleView[] {
  const lastTicks = new Map(ticks.map((t) => [t.name, t.lastTickAt]));
  return [...(release?.schedules.values() ?? [])].map((schedule) => {
    const lastTick = lastTicks.get(schedule.name) ?? null;
    return {
      ...scheduleManifest(schedule),
      lastTickAt: iso(lastTick),
      nextTickAt: iso(schedule.nextAfter(Math.max(lastTick ?? now, now))),
    };
  });
}

/** A delayed invocation as `GET /scheduled` shows it. */
export function toScheduledView(row: ScheduledRow): ScheduledInvocation {
  return {
    id: row.id,
    action: row.action,
    input: row.input,
    requestId: row.requestId,
    dueAt: new Date(row.dueAt).toISOString(),
    status: row.status,
    principal: { kind: row.principalKind, id: row.principalId },
    scheduledBy: row.scheduledBy,
    executionId: row.executionId,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}
