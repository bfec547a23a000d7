import type { QueryFormat } from "../data/service.ts";
import type { Upload } from "../files/service.ts";
import { loggable } from "../lib/database-errors.ts";
import { PublicError } from "../lib/errors.ts";
import { uuidV7Floor } from "../lib/ids.ts";
import { LoopFailures } from "../lib/loop-failures.ts";
import { NO_SPAN } from "../observe/tracing.ts";
import type { ActionContract } from "../release/contract.ts";
import type { LoadedAction, LoadedRelease } from "../release/load.ts";
import type { Principal } from "../sdk/index.ts";
import type { ExecutionListRow } from "../store/executions.ts";
import type { ExecutionRow, LogRow, RunRow, StepRow } from "../store/rows.ts";
import type { BoundedStep, RunListRow } from "../store/runs.ts";
import { type ExecutionStatus, isRunTerminal, isTerminal, type RunStatus } from "../store/statuses.ts";
import type { Store } from "../store/store.ts";
import { mayKnow, mayRun } from "./access.ts";
import { Deadlines } from "./deadlines.ts";
import { accessDenied, actionNotFound, executionNotFound, runNotFound } from "./errors.ts";
import type { ExecutionEvent, ExecutionFeed } from "./execution-feed.ts";
import { canSee, inputFingerprint, LIST_VALUE_BYTES } from "./executions.ts";
import {
  DEFAULT_POLL,
  type FollowOptions,
  type FollowSettings,
  followExecution,
  lastStatus,
  type PollBackoff,
} from "./follow.ts";
import { fileFields, type InvokeOutcome, type InvokeRequest, invocationIssues, NO_FILES } from "./invocation.ts";
import { Liveness } from "./liveness.ts";
import { type Page, pageOf } from "./page.ts";
import { type EngineResources, engineResources, type GivenResources } from "./resources.ts";
import { Retention, type RetentionSettings } from "./retention.ts";
import { Runner } from "./runner.ts";
import { Scheduling } from "./schedules/scheduling.ts";
import { newRun } from "./workflows/new-run.ts";
import { type WorkerSettings, WorkflowWorker } from "./workflows/worker.ts";

export interface EngineOptions extends GivenResources {
  workflows: WorkerSettings;
  /** How long an invoke waits for the end when its caller does not say. */
  waitMs: number;
  /** Forget executions this long after they ended (EXECUTION_RETENTION); unset: keep them. */
  retention?: RetentionSettings;
  /** How a follower re-reads an execution it has heard nothing about (default 25 ms → 1 s). */
  followPoll?: PollBackoff;
}

export type { Page } from "./page.ts";

async function refuseUnless(allowed: boolean | Promise<boolean>, action: string): Promise<void> {
  if (!(await allowed)) throw accessDenied(action);
}

/** A run as the run view reads it; `logs` holds every line of its log, each naming its step (or null). */
export interface RunWithSteps {
  run: RunRow;
  steps: StepRow[];
  logs: LogRow[];
}

/** A run with its steps and log, large values left out (`engine.getBoundedRun`). */
export interface BoundedRun {
  run: RunListRow;
  steps: BoundedStep[];
  logs: LogRow[];
}

/** Enough for any run's whole log: the bound is per execution, and only error lines go past it (one per attempt). */
const RUN_VIEW_LOG_LINES = 5_000;

/** The one path every caller (HTTP, MCP) takes to run actions and follow executions. */
export class Engine {
  private readonly $: EngineResources;
  private readonly runner: Runner;
  /** Bounds each invoke's wait for its handler without a timer per invoke. */
  private readonly deadlines = new Deadlines();
  private readonly workflows: WorkflowWorker;
  private readonly liveness: Liveness;
  private readonly retention: Retention | null;
  /** The release's schedules and `ctx.schedule`'s delayed invocations. */
  readonly scheduling: Scheduling;
  /** Status changes and log lines of the executions running in this process (for subscribe-stream). */
  readonly feed: ExecutionFeed;
  private readonly waitMs: number;
  private readonly following: FollowSettings;

  constructor(options: EngineOptions) {
    const $ = engineResources(options);
    this.$ = $;
    this.feed = $.feed;
    this.waitMs = options.waitMs;
    this.following = {
      poll: options.followPoll ?? DEFAULT_POLL,
      failures: new LoopFailures("following executions", $.log),
    };
    this.runner = new Runner($);
    this.workflows = new WorkflowWorker($, options.workflows);
    this.liveness = new Liveness($, options.workflows.leaseMs);
    this.retention = options.retention ? new Retention($, options.retention) : null;
    this.scheduling = new Scheduling($, (request) => this.invoke(request), options.workflows);
  }

  /**
   * Starts this process's workflow workers, its heartbeat among the instances sharing the database,
   * hearing their changes to executions (so a follower here learns of an end there at once), and firing
   * the active release's schedules.
   */
  async start(): Promise<void> {
    await this.$.store.executions.listen((ids) => this.feed.stored(ids));
    await this.liveness.start();
    this.workflows.start();
    this.scheduling.start();
    this.retention?.start();
  }

  /** Prunes the executions past retention now (what the background sweep does); 0 when retention is off. */
  pruneExecutions(): Promise<number> {
    return this.retention?.sweep() ?? Promise.resolve(0);
  }

  /** Reads the active release's data as the caller (its view rules apply). Throws QueryRejected for a bad query. */
  query(principal: Principal, query: unknown, format: QueryFormat) {
    return this.$.data.query(principal, this.requireActiveRelease(), query, format);
  }

  /** The active release's actions this caller may know of (a service key's actions are hidden from users). */
  actions(principal: Principal): ActionContract[] {
    const release = this.requireActiveRelease();
    return [...release.actions.values()].filter((a) => mayKnow(a, principal)).map((a) => a.contract);
  }

  contract(principal: Principal, name: string): ActionContract {
    const action = this.action(this.requireActiveRelease(), name);
    if (!mayKnow(action, principal)) throw accessDenied(name);
    return action.contract;
  }

  /** Refuses (access_denied) a caller the action's access rule does not let run it. */
  async authorize(principal: Principal, name: string): Promise<void> {
    const release = this.requireActiveRelease();
    const action = this.action(release, name);
    await refuseUnless(mayRun(this.$, release, action, principal), name);
  }

  /**
   * Validate → claim (principal, requestId) → run → wait up to `waitMs`. A replay with the same input
   * returns the first execution without running anything; a different input is REQUEST_CONFLICT.
   */
  async invoke(request: InvokeRequest): Promise<InvokeOutcome> {
    const release = this.requireActiveRelease();
    const action = this.action(release, request.action);
    // Before anything that reads executions: a refused caller learns nothing about this request id.
    const allowed = mayRun(this.$, release, action, request.principal);
    if (allowed !== true) await refuseUnless(allowed, request.action);
    const sent = request.files ?? NO_FILES;
    const fingerprint = inputFingerprint(request.action, request.input, fileFields(sent));
    const issues = invocationIssues(action, request.input, sent);
    if (issues.length > 0) {
      // The same request may have been accepted before under another contract; answer that one.
      const earlier = await this.$.store.executions.findByRequest(request.principal, request.requestId);
      if (earlier) return this.replay(earlier, fingerprint, request);
      throw new PublicError("action_contract_validation_failed", "the input does not fit the action's input schema", {
        details: { issues },
      });
    }

    if (action.kind === "workflow") return this.admitRun(request, release, action, fingerprint);
    const now = this.$.now();
    // The claim's database batch (committed before the handler runs), as a child of the caller's span.
    const { tracer } = this.$.telemetry;
    const claimed = tracer.enabled
      ? tracer.start("db commit claim", request.trace, { "actuate.action": request.action })
      : NO_SPAN;
    let claim: Awaited<ReturnType<Store["executions"]["claimToRun"]>>;
    try {
      claim = await this.$.store.executions.claimToRun({
        id: Bun.randomUUIDv7(),
        requestId: request.requestId,
        principalKind: request.principal.kind,
        principalId: request.principal.id,
        action: request.action,
        kind: action.contract.kind,
        releaseVersion: release.version,
        contractHash: action.contract.contractHash,
        inputFingerprint: fingerprint,
        input: request.input,
        status: "running",
        output: null,
        errorCode: null,
        errorMessage: null,
        createdAt: now,
        startedAt: now,
        finishedAt: null,
        scheduledBy: request.scheduledBy ?? null,
      });
    } finally {
      claimed.end();
    }
    if (!claim.created) return this.replay(claim.row, fingerprint, request, request.waitMs);

    let input = request.input as Record<string, unknown>;
    let uploads: Upload[] | undefined;
    if (sent.size > 0) {
      try {
        const stored = await this.$.files.storeUploads(request.principal, claim.row.id, sent);
        input = { ...input, ...stored.handles };
        uploads = stored.uploads;
      } catch (error) {
        // What the store or its driver said (a statement, a path, a bucket) is the server's: logged, not recorded.
        const reason = "the files sent could not be stored";
        this.$.log(`execution ${claim.row.id}: ${reason}: ${loggable(error)}`, {
          level: "error",
          executionId: claim.row.id,
        });
        const stored = await this.$.store.executions.settle(claim.row.id, {
          status: "failed",
          output: null,
          errorCode: "action_failed",
          errorMessage: reason,
          finishedAt: this.$.now(),
        });
        // The files stored before the one that failed stay the execution's.
        const kept = await this.storedUploads(claim.row.id);
        return { execution: { ...claim.row, ...stored }, uploads: kept, settled: true, replayed: false };
      }
    }
    const done = this.runner.start(claim.row, release, action, request.principal, input, request.trace);
    const latest = (await this.deadlines.within(done, request.waitMs ?? this.waitMs)) ?? claim.row;
    // The claim was answered before its commit: a settled answer waited for the commit, a running one waits here.
    if (!isTerminal(latest.status)) await claim.committed;
    return { execution: latest, uploads, settled: isTerminal(latest.status), replayed: false };
  }

  /**
   * A workflow invocation: the execution and its run are committed together, then the run starts here
   * at once when a worker slot is free (this process takes the lease at admission), else it waits for a
   * worker of any instance. The caller is answered as soon as the run is admitted.
   */
  private async admitRun(
    request: InvokeRequest,
    release: LoadedRelease,
    action: LoadedAction,
    fingerprint: string,
  ): Promise<InvokeOutcome> {
    const now = this.$.now();
    const starting = this.workflows.reserve();
    const lease = starting ? { owner: this.workflows.owner, until: this.workflows.leaseUntil(now) } : null;
    const { execution, run } = newRun({
      principal: request.principal,
      requestId: request.requestId,
      input: request.input,
      contract: action.contract,
      releaseVersion: release.version,
      fingerprint,
      lease,
      now,
      scheduledBy: request.scheduledBy,
    });
    let admitted: Awaited<ReturnType<Store["runs"]["admit"]>>;
    try {
      admitted = await this.$.store.runs.admit(execution, run);
    } catch (error) {
      if (starting) this.workflows.unreserve();
      throw error;
    }
    if (!admitted.created) {
      if (starting) this.workflows.unreserve();
      return this.replay(admitted.execution, fingerprint, request);
    }
    if (starting) this.workflows.launch(run, execution, request.trace);
    return { execution: admitted.execution, settled: false, replayed: false, runId: run.id };
  }

  /** The caller's runs (every run for a service key), newest first, a page at a time. */
  async listRuns(
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
  async getRun(principal: Principal, id: string): Promise<RunWithSteps> {
    const run = await this.$.store.runs.get(id);
    if (!run || !canSee(principal, run)) throw runNotFound();
    const [steps, logs] = await Promise.all([
      this.$.store.runs.steps(id),
      // The whole log: bounded per execution (the lines, the truncated line, and the error lines past them).
      this.$.store.executionLogs.page(id, -1, RUN_VIEW_LOG_LINES),
    ]);
    return { run, steps, logs };
  }

  /**
   * A run as an agent reads it (the MCP run resource): like `getRun`, but its input, output and error and
   * each step's output and error over LIST_VALUE_BYTES are left in the database, their stored sizes given.
   */
  async getBoundedRun(principal: Principal, id: string): Promise<BoundedRun> {
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
  async cancelRun(principal: Principal, id: string): Promise<RunWithSteps> {
    const current = await this.getRun(principal, id);
    if (current.run.status === "canceled") return current;
    if (isRunTerminal(current.run.status)) {
      throw new PublicError("run_not_cancelable", `the run has already ended (${current.run.status})`, { runId: id });
    }
    await this.$.store.runs.requestCancel(id, this.$.now());
    this.workflows.cancel(id);
    return this.getRun(principal, id);
  }

  async getExecution(principal: Principal, id: string): Promise<ExecutionRow> {
    const row = await this.$.store.executions.get(id);
    if (!row || !canSee(principal, row)) throw executionNotFound();
    return row;
  }

  /**
   * A page of the log of an execution the caller may see: lines after `afterSeq` (-1: from the first).
   * `ended`: the execution had ended before the page was read, so no line comes after the last.
   */
  async executionLogs(
    principal: Principal,
    id: string,
    page: { afterSeq: number; limit: number },
  ): Promise<{ lines: LogRow[]; ended: boolean }> {
    const execution = await this.getExecution(principal, id);
    const lines = await this.$.store.executionLogs.page(id, page.afterSeq, page.limit);
    return { lines, ended: isTerminal(execution.status) };
  }

  async getExecutionByRequest(principal: Principal, requestId: string): Promise<ExecutionRow> {
    const row = await this.$.store.executions.findByRequest(principal, requestId);
    if (!row) throw executionNotFound();
    return row;
  }

  /**
   * The caller's executions (every one for a service key, or one caller's with `caller`), newest first,
   * a page at a time. `since` (inclusive) and `until` (exclusive) bound when they were created, as
   * their UUIDv7 ids record it: a range of the same index the page is read from.
   */
  async listExecutions(
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
    return followExecution(this.$, this.following, id, () => this.getExecution(principal, id), options);
  }

  /** Waits up to `waitMs` for the execution to end; `settled: false` when it has not. */
  awaitResult(principal: Principal, id: string, waitMs = this.waitMs) {
    return lastStatus(this.follow(principal, id, { deadline: this.$.now() + waitMs }));
  }

  /** Resolves once no handler runs in this process (their outcomes stored). */
  idle(): Promise<void> {
    return this.runner.idle();
  }

  /**
   * Halts the workflow runs here at once and lets go of their leases, so another instance resumes them;
   * lets handlers run on until `drained` settles (the server's requests in flight have their answers),
   * then stops them (their `ctx.signal` aborts) and waits up to `graceMs` for their outcome to be stored.
   */
  async shutdown(graceMs = 5_000, drained: Promise<unknown> = Promise.resolve()): Promise<void> {
    await this.scheduling.stop();
    await Promise.all([
      drained.then(() => this.runner.drain(graceMs)),
      this.workflows.stop(graceMs),
      this.retention?.stop(),
    ]);
    await this.liveness.stop();
  }

  private async replay(
    row: ExecutionRow,
    fingerprint: string,
    request: InvokeRequest,
    waitMs = this.waitMs,
  ): Promise<InvokeOutcome> {
    if (row.inputFingerprint !== fingerprint) {
      throw new PublicError("REQUEST_CONFLICT", "this requestId was already used with a different input", {
        executionId: row.id,
        executionStatus: row.status,
        requestId: row.requestId,
      });
    }
    const outcome = await this.replayed(row, waitMs);
    // Only a multipart invocation can have uploads (a JSON one of the same request would conflict):
    // the lookup stays off the plain invoke path.
    if (request.files !== undefined) outcome.uploads = await this.storedUploads(row.id);
    return outcome;
  }

  /** Where a replayed execution stands: a function's is waited for up to `waitMs`. */
  private async replayed(row: ExecutionRow, waitMs: number): Promise<InvokeOutcome> {
    // A workflow's invocation answers at admission, replayed or not: the same run, to be followed.
    if (row.kind === "workflow") {
      return { execution: row, settled: isTerminal(row.status), replayed: true, runId: row.id };
    }
    if (isTerminal(row.status)) return { execution: row, settled: true, replayed: true };
    const deadline = this.$.now() + waitMs;
    const latest = await lastStatus(followExecution(this.$, this.following, row.id, async () => row, { deadline }));
    return { ...latest, replayed: true };
  }

  private async storedUploads(executionId: string): Promise<Upload[] | undefined> {
    return (await this.$.files.uploadsOf([executionId])).get(executionId);
  }

  /** The release served now, or null before any is published. A call reads it once and keeps it. */
  activeRelease(): LoadedRelease | null {
    return this.$.release();
  }

  /** The release served now; 503 no_active_release before any is published. */
  requireActiveRelease(): LoadedRelease {
    const release = this.$.release();
    if (!release) throw new PublicError("no_active_release", "no release is active; publish one first");
    return release;
  }

  private action(release: LoadedRelease, name: string) {
    const action = release.actions.get(name);
    if (!action) throw actionNotFound(name);
    return action;
  }
}
