import { uuidOrNull } from "../../lib/ids.ts";
import { storableJson } from "../../lib/json-text.ts";
import type { LoadedRelease } from "../../release/load.ts";
import type { ActionContext, Principal, ScheduleWhen } from "../../sdk/index.ts";
import type { DataWrite } from "../../store/data.ts";

export type ScheduleTools = Pick<ActionContext, "schedule" | "cancelScheduled">;

/**
 * `ctx.schedule` and `ctx.cancelScheduled` of one execution (or one step attempt): each checks what it
 * is given now, so the code sees its mistake where it made it, and records a write that commits with
 * the execution's other writes, or not at all.
 */
export function scheduleTools(deps: {
  release: LoadedRelease;
  principal: Principal;
  executionId: string;
  now: () => number;
  /** The largest input it may hand on, as JSON: what the action itself may return (MAX_OUTPUT_BYTES). */
  maxInputBytes: number;
  record: (write: DataWrite) => void;
}): ScheduleTools {
  const { principal } = deps;
  return {
    async schedule(action, input, when) {
      const target = deps.release.actions.get(action);
      if (!target)
        throw new Error(`ctx.schedule: no action ${JSON.stringify(action)} in release ${deps.release.version}`);
      const stored = storableJson(input, "/input", deps.maxInputBytes, "the most an action may hand on");
      if ("problem" in stored) throw new Error(`ctx.schedule: the input ${stored.problem}`);
      const issues = target.checkInput(stored.value);
      if (issues.length > 0) {
        const listed = issues.map((i) => `${i.where} ${i.message}`).join("; ");
        throw new Error(`ctx.schedule: the input does not fit ${action}'s input schema: ${listed}`);
      }
      const now = deps.now();
      const id = Bun.randomUUIDv7();
      const requestId = when?.requestId === undefined ? id : uuidOrNull(when.requestId);
      if (requestId === null) throw new Error("ctx.schedule: requestId must be a UUID");
      deps.record({
        op: "schedule",
        row: {
          id,
          principalKind: principal.kind,
          principalId: principal.id,
          principalClaims: principal.claims ? { ...principal.claims } : null,
          action,
          input: stored.value,
          requestId,
          dueAt: dueAt(when, now),
          scheduledBy: deps.executionId,
          status: "pending",
          executionId: null,
          leaseOwner: null,
          leaseExpiresAt: null,
          createdAt: now,
          updatedAt: now,
        },
      });
      return id;
    },
    async cancelScheduled(id) {
      const scheduled = uuidOrNull(id);
      if (scheduled === null) throw new Error("ctx.cancelScheduled: not the id of a scheduled invocation");
      deps.record({
        op: "cancelScheduled",
        id: scheduled,
        principal: principal.kind === "service" ? null : { kind: principal.kind, id: principal.id },
        at: deps.now(),
      });
    },
  };
}

function dueAt(when: ScheduleWhen | undefined, now: number): number {
  const at = when?.at instanceof Date ? when.at.getTime() : when?.at;
  const afterMs = when?.afterMs;
  if ((at === undefined) === (afterMs === undefined)) throw new Error("ctx.schedule: give either at or afterMs");
  if (afterMs !== undefined) {
    if (typeof afterMs !== "number" || !Number.isFinite(afterMs) || afterMs < 0) {
      throw new Error("ctx.schedule: afterMs must be a number of milliseconds, 0 or more");
    }
    return now + Math.ceil(afterMs);
  }
  if (typeof at !== "number" || !Number.isFinite(at))
    throw new Error("ctx.schedule: at must be a Date or epoch milliseconds");
  return Math.ceil(at);
}
