import type { QueryFormat } from "../data/service.ts";
import { loggable } from "../lib/database-errors.ts";
import { PublicError } from "../lib/errors.ts";
import { LoopFailures } from "../lib/loop-failures.ts";
import { NO_SPAN } from "../observe/tracing.ts";
import type { ActionContract } from "../release/contract.ts";
import type { LoadedAction, LoadedRelease } from "../release/load.ts";
import type { Principal } from "../sdk/index.ts";
import type { ExecutionRow, RunRow } from "../store/rows.ts";
import { isTerminal } from "../store/statuses.ts";
import type { Store } from "../store/store.ts";
import type { Sealer } from "../variables/sealing.ts";
import type { Upload } from "../wire/views.ts";
import { mayKnow, mayRun } from "./access.ts";
import { Deadlines } from "./deadlines.ts";
import { accessDenied, actionNotFound } from "./errors.ts";
import type { ExecutionFeed } from "./execution-feed.ts";
import { ExecutionReads } from "./execution-reads.ts";
import { inputFingerprint } from "./executions.ts";
import { DEFAULT_POLL, type PollBackoff } from "./follow.ts";
import { fileFields, type InvokeOutcome, type InvokeRequest, invocationIssues, NO_FILES } from "./invocation.ts";
import { ListFeed } from "./list-feed.ts";
import { Liveness } from "./liveness.ts";
import { type EngineResources, engineResources, type GivenResources } from "./resources.ts";
import { Retention, type RetentionSettings } from "./retention.ts";
import { Runner } from "./runner.ts";
import { Scheduling } from "./schedules/scheduling.ts";
import { VariableAdmin } from "./variables.ts";
import { newRun } from "./workflows/new-run.ts";
import { Runs } from "./workflows/runs.ts";
import { type WorkerSettings, type WorkflowDriver, WorkflowWorker } from "./workflows/worker.ts";

export interface EngineOptions extends GivenResources {
  workflows: WorkerSettings;
  /** How long an invoke waits for the end when its caller does not say. */
  waitMs: number;
  /** Forget executions this long after they ended (EXECUTION_RETENTION); unset: keep them. */
  retention?: RetentionSettings;
  /** How a follower re-reads an execution it has heard nothing about (default 25 ms → 1 s). */
  followPoll?: PollBackoff;
  /**
   * "own" (default, single mode): the engine polls for its due work (runs, schedules, delayed invocations,
   * retention) and beats the instance's heartbeat itself. Driven (hosting mode): it does none of that; the
   * process's service loops (runtime/service-loops.ts) claim every environment's due work and hand it over
   * (`runClaimed`, `scheduling.startClaimed`, `scheduling.passNow`), and beat once for the process.
   */
  loops?: "own" | WorkflowDriver;
  /**
   * What `engine.variables` seals secrets with (null: no SECRETS_KEY, a secret is refused), and how a change
   * reaches this process's invocations at once (default: none, and no sealer).
   */
  variableAdmin?: { sealer: Sealer | null; changed: () => Promise<void> };
}

async function refuseUnless(allowed: boolean | Promise<boolean>, action: string): Promise<void> {
  if (!(await allowed)) throw accessDenied(action);
}

/** The one path every caller (HTTP, MCP) takes to run actions and follow executions. */
export class Engine {
  private readonly $: EngineResources;
  private readonly runner: Runner;
  /** Bounds each invoke's wait for its handler without a timer per invoke. */
  private readonly deadlines = new Deadlines();
  private readonly workflows: WorkflowWorker;
  private readonly liveness: Liveness;
  private readonly retention: Retention | null;
  /** Executions as callers read and follow them. */
  readonly executions: ExecutionReads;
  /** Workflow runs as callers read them, and their cancel. */
  readonly runs: Runs;
  /** The release's schedules and `ctx.schedule`'s delayed invocations. */
  readonly scheduling: Scheduling;
  /** Status changes and log lines of the executions running in this process (for subscribe-stream). */
  readonly feed: ExecutionFeed;
  /** The executions and runs lists' new and changed rows, while someone watches them (live lists). */
  readonly lists: ListFeed;
  /** The environment's variables and secrets, for service keys. */
  readonly variables: VariableAdmin;
  private readonly waitMs: number;
  private readonly driven: boolean;

  constructor(options: EngineOptions) {
    const $ = engineResources(options);
    this.$ = $;
    this.feed = $.feed;
    this.waitMs = options.waitMs;
    this.runner = new Runner($);
    const driver = options.loops === undefined || options.loops === "own" ? null : options.loops;
    this.driven = driver !== null;
    this.workflows = new WorkflowWorker($, options.workflows, driver);
    this.liveness = new Liveness($, options.workflows.leaseMs);
    this.retention = options.retention ? new Retention($, options.retention) : null;
    this.scheduling = new Scheduling($, (request) => this.invoke(request), options.workflows);
    const following = {
      poll: options.followPoll ?? DEFAULT_POLL,
      failures: new LoopFailures("following executions", $.log),
    };
    this.executions = new ExecutionReads($, following, options.waitMs);
    this.runs = new Runs($, this.workflows);
    this.lists = new ListFeed($);
    this.variables = new VariableAdmin({
      store: $.store,
      sealer: options.variableAdmin?.sealer ?? null,
      release: $.release,
      changed: options.variableAdmin?.changed ?? (() => Promise.resolve()),
      now: $.now,
    });
  }

  /**
   * Starts this process's workflow workers, its heartbeat among the instances sharing the database,
   * hearing their changes to executions (so a follower here learns of an end or a log line there at
   * once), and firing the active release's schedules.
   */
  async start(): Promise<void> {
    await this.$.store.executions.listen(this.feed);
    if (this.driven) {
      this.workflows.start();
      return;
    }
    await this.liveness.start();
    this.workflows.start();
    this.scheduling.start();
    this.retention?.start();
  }

  /** Driven (hosting mode): runs a run the process's service loops claimed for this environment; false once stopped. */
  runClaimed(run: RunRow & { takenFrom?: string | null }): boolean {
    return this.workflows.adopt(run);
  }

  /** Driven: the runs executing here, whose leases the process's heartbeat renews. */
  heldRuns(): string[] {
    return this.workflows.held();
  }

  /** Driven: what the process's renewal of `ids` answered (those still held, with whether a cancel was asked). */
  leasesRenewed(ids: string[], held: { id: string; cancelRequested: boolean }[]): void {
    this.workflows.renewed(ids, held);
  }

  /** Workflow runs starting or running in this engine now. */
  busyRuns(): number {
    return this.workflows.busy();
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
    this.$.feed.created(claim.row, claim.committed);

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
    this.$.feed.created(admitted.execution);
    if (starting) this.workflows.launch(run, execution, request.trace);
    return { execution: admitted.execution, settled: false, replayed: false, runId: run.id };
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
    // Driven: the heartbeat is the process's, retired by its service loops once every environment stopped.
    if (!this.driven) await this.liveness.stop();
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
    return { ...(await this.executions.awaitEnd(row, waitMs)), replayed: true };
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
