import { PublicError } from "../lib/errors.ts";
import { uuidV7Floor } from "../lib/ids.ts";
import type { Principal } from "../sdk/index.ts";
import type { ExecutionListRow } from "../store/executions.ts";
import type { ExecutionRow, LogRow } from "../store/rows.ts";
import { type ExecutionStatus, isTerminal } from "../store/statuses.ts";
import { executionNotFound } from "./errors.ts";
import type { ExecutionEvent } from "./execution-feed.ts";
import { canSee, LIST_VALUE_BYTES } from "./executions.ts";
import { type FollowOptions, type FollowSettings, followExecution, lastStatus } from "./follow.ts";
import { type Page, pageOf } from "./page.ts";
import type { EngineResources } from "./resources.ts";

/** Executions as a caller reads and follows them (its own, or any for a service key), wherever they run. */
export class ExecutionReads {
  constructor(
    private readonly $: Pick<EngineResources, "store" | "feed" | "now">,
    private readonly following: FollowSettings,
    /** How long `awaitResult` waits when its caller does not say. */
    private readonly waitMs: number,
  ) {}

  async get(principal: Principal, id: string): Promise<ExecutionRow> {
    const row = await this.$.store.executions.get(id);
    if (!row || !canSee(principal, row)) throw executionNotFound();
    return row;
  }

  /**
   * A page of the log of an execution the caller may see: lines after `afterSeq` (-1: from the first).
   * `ended`: the execution had ended before the page was read, so no line comes after the last.
   */
  async logs(
    principal: Principal,
    id: string,
    page: { afterSeq: number; limit: number },
  ): Promise<{ lines: LogRow[]; ended: boolean }> {
    const execution = await this.get(principal, id);
    const lines = await this.$.store.executionLogs.page(id, page.afterSeq, page.limit);
    return { lines, ended: isTerminal(execution.status) };
  }

  async getByRequest(principal: Principal, requestId: string): Promise<ExecutionRow> {
    const row = await this.$.store.executions.findByRequest(principal, requestId);
    if (!row) throw executionNotFound();
    return row;
  }

  /**
   * The caller's executions (every one for a service key, or one caller's with `caller`), newest first,
   * a page at a time. `since` (inclusive) and `until` (exclusive) bound when they were created, as
   * their UUIDv7 ids record it: a range of the same index the page is read from.
   */
  async list(
    principal: Principal,
    query: {
      limit: number;
      afterId?: string;
      action?: string;
      status?: ExecutionStatus;
      since?: number;
      until?: number;
      caller?: Principal;
    },
  ): Promise<Page<ExecutionListRow>> {
    if (query.caller && principal.kind !== "service") {
      throw new PublicError("access_denied", "only a service key may list another caller's executions");
    }
    const untilId = query.until === undefined ? undefined : uuidV7Floor(query.until);
    const beforeId = [query.afterId, untilId].filter((id) => id !== undefined).sort()[0];
    const items = await this.$.store.executions.list({
      principal: principal.kind === "service" ? query.caller : principal,
      action: query.action,
      status: query.status,
      beforeId,
      sinceId: query.since === undefined ? undefined : uuidV7Floor(query.since),
      limit: query.limit + 1,
      maxValueBytes: LIST_VALUE_BYTES,
    });
    return pageOf(items, query.limit);
  }

  /**
   * The events of an execution the caller may see, wherever it runs: its status now, then each change
   * and log line until it ends (or the deadline passes, or the signal aborts). Throws execution_not_found
   * (on the first step) for an execution that is not the caller's.
   */
  follow(principal: Principal, id: string, options: FollowOptions = {}): AsyncGenerator<ExecutionEvent> {
    return followExecution(this.$, this.following, id, () => this.get(principal, id), options);
  }

  /** Waits up to `waitMs` for the execution to end; `settled: false` when it has not. */
  awaitResult(principal: Principal, id: string, waitMs = this.waitMs) {
    return lastStatus(this.follow(principal, id, { deadline: this.$.now() + waitMs }));
  }

  /** Waits up to `waitMs` for an execution read already (a replay's) to end; `settled: false` when it has not. */
  awaitEnd(row: ExecutionRow, waitMs: number) {
    const deadline = this.$.now() + waitMs;
    return lastStatus(followExecution(this.$, this.following, row.id, async () => row, { deadline }));
  }
}
