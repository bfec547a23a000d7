import { PublicError } from "../../lib/errors.ts";
import type { Principal } from "../../sdk/index.ts";
import type { ScheduledRow } from "../../store/rows.ts";
import type { ScheduledStatus } from "../../store/statuses.ts";
import { scheduledNotFound } from "../errors.ts";
import { canSee, inputFingerprint } from "../executions.ts";
import type { Invoke } from "../invocation.ts";
import { type Page, pageOf } from "../page.ts";
import type { EngineResources } from "../resources.ts";
import { type DelayedInvocation, Dispatcher } from "./dispatcher.ts";
import { Scheduler } from "./scheduler.ts";
import { type ScheduleView, scheduleViews } from "./view.ts";

/** How many due delayed invocations one dispatcher pass starts at most. */
const DISPATCH_BATCH = 256;

/**
 * Time-based invocations in this process: the release's schedules (Scheduler) and the delayed
 * invocations of `ctx.schedule` (Dispatcher), and what the adapters ask of them.
 */
export class Scheduling {
  private readonly scheduler: Scheduler;
  private readonly dispatcher: Dispatcher;

  /**
   * `invoke`: Engine.invoke; `settings`: how long a claim holds, the longest sleep between passes (the
   * workflow workers' own). This process, as the owner of claims, is the store's instance.
   */
  constructor(
    private readonly $: Pick<EngineResources, "store" | "release" | "log" | "now">,
    invoke: Invoke,
    { leaseMs, pollMs }: { leaseMs: number; pollMs: number },
  ) {
    const owner = $.store.instances.id;
    this.scheduler = new Scheduler($, invoke, { owner, pollMs, leaseMs });
    const recordRefusal = (request: DelayedInvocation, refusal: PublicError) => this.recordRefusal(request, refusal);
    this.dispatcher = new Dispatcher($, invoke, recordRefusal, { owner, pollMs, leaseMs, batch: DISPATCH_BATCH });
  }

  start(): void {
    this.scheduler.start();
    this.dispatcher.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.scheduler.stop(), this.dispatcher.stop()]);
  }

  /**
   * Hosting mode (the process's service loops drive these, no own loop): fires the due schedules now and
   * answers when one is next due, null when the release has none.
   */
  async passNow(): Promise<number | null> {
    const next = await this.scheduler.pass();
    return next === Number.POSITIVE_INFINITY ? null : next;
  }

  /** Hosting mode: starts delayed invocations the process's service loops claimed for this environment. */
  startClaimed(due: ScheduledRow[]): Promise<void> {
    return this.dispatcher.startClaimed(due);
  }

  /** The active release's schedules and where each stands; for service keys only. */
  async schedules(principal: Principal): Promise<{ release: string | null; items: ScheduleView[] }> {
    if (principal.kind !== "service") throw new PublicError("access_denied", "schedules are for service keys");
    const release = this.$.release();
    const ticks = await this.$.store.schedules.list();
    return { release: release?.version ?? null, items: scheduleViews(release, ticks, this.$.now()) };
  }

  /** The caller's delayed invocations (every one for a service key), newest first, a page at a time. */
  async list(
    principal: Principal,
    query: { limit: number; afterId?: string; status?: ScheduledStatus },
  ): Promise<Page<ScheduledRow>> {
    const items = await this.$.store.delayedInvocations.list({
      principal: principal.kind === "service" ? undefined : principal,
      status: query.status,
      beforeId: query.afterId,
      limit: query.limit + 1,
    });
    return pageOf(items, query.limit);
  }

  async get(principal: Principal, id: string): Promise<ScheduledRow> {
    const row = await this.$.store.delayedInvocations.get(id);
    if (!row || !canSee(principal, row)) throw scheduledNotFound();
    return row;
  }

  /** Cancels a pending delayed invocation; one already started (or starting now) is scheduled_not_cancelable. */
  async cancel(principal: Principal, id: string): Promise<ScheduledRow> {
    const row = await this.get(principal, id);
    if (row.status === "canceled") return row;
    const owner = principal.kind === "service" ? null : principal;
    if (!(await this.$.store.delayedInvocations.cancel(id, owner, this.$.now()))) {
      const now = await this.get(principal, id);
      if (now.status === "canceled") return now;
      const why = now.status === "started" ? "has started" : "is starting";
      throw new PublicError("scheduled_not_cancelable", `the scheduled invocation ${why}`, {
        executionId: now.executionId,
      });
    }
    return this.get(principal, id);
  }

  /**
   * A delayed invocation the engine refused (access, a missing action, an input the contract no longer
   * takes): recorded as a failed execution under its request id, since no caller is there to be told.
   */
  private async recordRefusal(request: DelayedInvocation, refusal: PublicError): Promise<string> {
    const release = this.$.release();
    const action = release?.actions.get(request.action);
    const now = this.$.now();
    const { row } = await this.$.store.executions.claim({
      id: Bun.randomUUIDv7(),
      requestId: request.requestId,
      principalKind: request.principal.kind,
      principalId: request.principal.id,
      action: request.action,
      kind: action?.contract.kind ?? "function",
      releaseVersion: release?.version ?? "",
      contractHash: action?.contract.contractHash ?? "",
      inputFingerprint: inputFingerprint(request.action, request.input, {}),
      input: request.input,
      status: "failed",
      output: null,
      errorCode: refusal.code,
      errorMessage: refusal.message,
      createdAt: now,
      startedAt: null,
      finishedAt: now,
      scheduledBy: request.scheduledBy,
    });
    return row.id;
  }
}
