import { PublicError } from "../../lib/errors.ts";
import type { Principal } from "../../sdk/index.ts";
import type { LogRow, RunRow, StepRow } from "../../store/rows.ts";
import type { BoundedStep, RunListRow } from "../../store/runs.ts";
import { isRunTerminal, type RunStatus } from "../../store/statuses.ts";
import { runNotFound } from "../errors.ts";
import { canSee, LIST_VALUE_BYTES } from "../executions.ts";
import { type Page, pageOf } from "../page.ts";
import type { EngineResources } from "../resources.ts";
import type { WorkflowWorker } from "./worker.ts";

/** A run as the run view reads it; `logs` holds every line of its log, each naming its step (or null). */
export interface RunWithSteps {
  run: RunRow;
  steps: StepRow[];
  logs: LogRow[];
}

/** A run with its steps and log, large values left out (`getBounded`). */
export interface BoundedRun {
  run: RunListRow;
  steps: BoundedStep[];
  logs: LogRow[];
}

/** Enough for any run's whole log: the bound is per execution, and only error lines go past it (one per attempt). */
const RUN_VIEW_LOG_LINES = 5_000;

/** Workflow runs as a caller reads them (its own, or any for a service key), and their cancel. */
export class Runs {
  constructor(
    private readonly $: Pick<EngineResources, "store" | "now">,
    /** Told of a cancel, so a run executing in this process stops at its next step boundary. */
    private readonly workflows: Pick<WorkflowWorker, "cancel">,
  ) {}

  /** The caller's runs (every run for a service key), newest first, a page at a time. */
  async list(
    principal: Principal,
    query: { limit: number; afterId?: string; workflow?: string; status?: RunStatus },
  ): Promise<Page<RunListRow>> {
    const items = await this.$.store.runs.list({
      principal: principal.kind === "service" ? undefined : principal,
      workflow: query.workflow,
      status: query.status,
      beforeId: query.afterId,
      limit: query.limit + 1,
      maxValueBytes: LIST_VALUE_BYTES,
    });
    return pageOf(items, query.limit);
  }

  /** A workflow run with its steps and log, if the caller may see it (its own, or any for a service key). */
  async get(principal: Principal, id: string): Promise<RunWithSteps> {
    return this.withSteps(await this.getRow(principal, id));
  }

  /** The run's row alone (no steps, no log), if the caller may see it: what a status poll needs. */
  async getRow(principal: Principal, id: string): Promise<RunRow> {
    const run = await this.$.store.runs.get(id);
    if (!run || !canSee(principal, run)) throw runNotFound();
    return run;
  }

  private async withSteps(run: RunRow): Promise<RunWithSteps> {
    const { id } = run;
    const [steps, logs] = await Promise.all([
      this.$.store.runs.steps(id),
      // The whole log: bounded per execution (the lines, the truncated line, and the error lines past them).
      this.$.store.executionLogs.page(id, -1, RUN_VIEW_LOG_LINES),
    ]);
    return { run, steps, logs };
  }

  /**
   * A run as an agent reads it (the MCP run resource): like `get`, but its input, output and error and
   * each step's output and error over LIST_VALUE_BYTES are left in the database, their stored sizes given.
   */
  async getBounded(principal: Principal, id: string): Promise<BoundedRun> {
    const run = await this.$.store.runs.getBounded(id, LIST_VALUE_BYTES);
    if (!run || !canSee(principal, run)) throw runNotFound();
    const [steps, logs] = await Promise.all([
      this.$.store.runs.boundedSteps(id, LIST_VALUE_BYTES),
      this.$.store.executionLogs.page(id, -1, RUN_VIEW_LOG_LINES),
    ]);
    return { run, steps, logs };
  }

  /**
   * Stops a run: one that waits (queued, sleeping, backing off) ends `canceled` at once; a running one at
   * its next step boundary, its step's `ctx.signal` aborted now. Canceling a canceled run changes nothing.
   */
  async cancel(principal: Principal, id: string): Promise<RunWithSteps> {
    // The row alone decides: its steps and log are read once, for the answer.
    const current = await this.getRow(principal, id);
    if (current.status === "canceled") return this.withSteps(current);
    if (isRunTerminal(current.status)) {
      throw new PublicError("run_not_cancelable", `the run has already ended (${current.status})`, { runId: id });
    }
    await this.$.store.runs.requestCancel(id, this.$.now());
    this.workflows.cancel(id);
    return this.get(principal, id);
  }
}
