import { AsyncLocalStorage } from "node:async_hooks";
import { isDatabaseUnavailable, loggable } from "../../lib/database-errors.ts";
import { messageOf } from "../../lib/errors.ts";
import { storableJson } from "../../lib/json-text.ts";
import type { LoopFailures } from "../../lib/loop-failures.ts";
import { NO_SPAN, type Span, type SpanParent } from "../../observe/tracing.ts";
import type { LoadedRelease, LoadedWorkflow } from "../../release/load.ts";
import type { DataContext, Principal, StepContext, StepOptions, WorkflowContext } from "../../sdk/index.ts";
import type { DataWrite } from "../../store/data.ts";
import type { LogTally } from "../../store/execution-logs.ts";
import type { RunRow, StepRow } from "../../store/rows.ts";
import { type Fenced, type RunSettlement, runCanceled, type StepSaved } from "../../store/runs.ts";
import { ExecutionLog } from "../execution-log.ts";
import { logger, thrownLine } from "../log-line.ts";
import { type Redactor, redactorFor, redactText } from "../redaction.ts";
import type { EngineResources } from "../resources.ts";
import { type ScheduleTools, scheduleTools } from "../schedules/delayed-context.ts";
import type { VariableSnapshot } from "../variable-snapshot.ts";

/** Why a run stops short of an end of its own: asked to, the server is going away, or another worker took it. */
export type Halt = "canceled" | "shutdown" | "lease_lost";

/** How one pass over a run ended: the run ended, it waits (sleep, retry backoff) until `wakeAt`, or it was let go. */
export type PassOutcome =
  | { kind: "ended"; settlement: RunSettlement }
  | { kind: "suspended"; wakeAt: number }
  | { kind: "released" };

const DEFAULT_RETRIES = 2;
const DEFAULT_BACKOFF_MS = 1_000;

/** Thrown by a step whose attempts are spent; the run fails with its message unless the workflow catches it. */
export class StepFailed extends Error {
  override name = "StepFailed";
  constructor(
    readonly step: string,
    message: string,
  ) {
    super(message);
  }
}

/** Unwinds the workflow's code when the pass cannot go on; what happens next is in the execution's state. */
class Unwind extends Error {
  override name = "Unwind";
  constructor() {
    super("the workflow run stopped here (suspended, canceled or handed over)");
  }
}

/**
 * One pass over a run by the worker holding its lease: the workflow's code runs from the top, steps that
 * have a checkpoint answer it without running, the first step without one runs and is checkpointed, and
 * so on until the code returns (the run ends), sleeps or backs off (the run is suspended, the lease given
 * up), or is halted. State, not exceptions, decides the outcome: workflow code that catches an unwinding
 * error cannot make a suspended or halted pass go on.
 */
export class RunExecution {
  private readonly abort = new AbortController();
  private halted: Halt | null = null;
  private suspendedUntil: number | null = null;
  /** A misuse of the workflow API (a name used twice, a result that is not JSON): the run fails with it. */
  private misuse: string | null = null;
  private checkpoints = new Map<string, StepRow>();
  private readonly used = new Set<string>();
  private seq = 0;
  private readonly principal: Principal;
  /** The `db` of the step whose function is running, so the run's own `ctx.db` writes into that step. */
  private readonly stepDb = new AsyncLocalStorage<DataContext>();
  /** The name of the step whose function is running, so its `ctx.log` lines are the step's. */
  private readonly stepName = new AsyncLocalStorage<string>();
  /** This pass's log; numbering goes on from the lines earlier passes stored. */
  private log: ExecutionLog | null = null;
  /** Likewise the step's `ctx.schedule` and `ctx.cancelScheduled`. */
  private readonly stepTools = new AsyncLocalStorage<ScheduleTools>();
  private span: Span = NO_SPAN;
  /** The environment's variables as this pass started (`ctx.env`; the secrets to redact). */
  readonly variables: VariableSnapshot;
  /** For the worker's failures: this pass's store calls begin with it. */
  private readonly begun: number;
  /** Their secrets' redactor (null without secrets): step results, the output, errors and log lines pass through it. */
  private readonly redactor: Redactor | null;

  /** `fresh`: the run was just admitted by this process, so it has no checkpoints to read yet. */
  constructor(
    private readonly run: RunRow,
    private readonly owner: string,
    /** The worker's store failures, its runs' included: an outage is told once, not once per run. */
    private readonly failures: LoopFailures,
    private readonly $: Pick<
      EngineResources,
      | "store"
      | "data"
      | "feed"
      | "releaseVersion"
      | "log"
      | "now"
      | "telemetry"
      | "logLimits"
      | "maxOutputBytes"
      | "variables"
    >,
    private readonly fresh = false,
    /** The span of the request that admitted the run, for the pass started at admission. */
    private readonly parent?: SpanParent,
  ) {
    this.begun = failures.begin();
    this.variables = $.variables();
    this.redactor = redactorFor(this.variables);
    this.principal = {
      kind: run.principalKind,
      id: run.principalId,
      ...(run.principalClaims ? { claims: run.principalClaims } : {}),
    };
    if (run.cancelRequested) this.halted = "canceled";
  }

  /** Cancel stops the run at its next step boundary; shutdown and a lost lease stop this pass at once. */
  halt(reason: Halt): void {
    if (this.halted === null || reason !== "canceled") this.halted = reason;
    this.abort.abort(new Error(reason === "canceled" ? "the run was canceled" : "the run was handed over"));
  }

  /** The pass, as a span (its steps are its children). */
  async execute(): Promise<PassOutcome> {
    const { run } = this;
    this.span = this.$.telemetry.tracer.start(`workflow ${run.workflow}`, this.parent, {
      "actuate.action": run.workflow,
      "actuate.execution_id": run.id,
    });
    try {
      const outcome = await this.pass();
      this.span.setAttributes({ "actuate.pass": outcome.kind });
      if (outcome.kind === "ended") {
        this.span.setAttributes({ "actuate.status": outcome.settlement.status });
        if (outcome.settlement.status !== "succeeded") this.span.fail(outcome.settlement.errorMessage ?? "");
      }
      return outcome;
    } catch (error) {
      this.span.fail((error as Error).message);
      throw error;
    } finally {
      this.span.end();
    }
  }

  private async pass(): Promise<PassOutcome> {
    let release: LoadedRelease;
    try {
      release = await this.$.releaseVersion(this.run.releaseVersion);
    } catch (error) {
      return this.releaseFailed(error);
    }
    const action = release.actions.get(this.run.workflow);
    if (action?.kind !== "workflow") {
      return this.end(failed(`release ${release.version} has no workflow ${this.run.workflow}`, this.$.now()));
    }
    const [steps, tally] = this.fresh
      ? [[], undefined]
      : await Promise.all([this.$.store.runs.steps(this.run.id), this.$.store.executionLogs.tally(this.run.id)]);
    this.log = this.executionLog(tally);
    this.checkpoints = new Map(steps.map((step) => [step.name, step]));
    if (this.halted === "canceled") return this.end(runCanceled(this.$.now()));

    // One context for the pass: each step gets it with its own `db`, whose writes commit with its checkpoint.
    const ctx = this.context(release);
    let returned: unknown;
    let thrown: unknown = null;
    try {
      returned = await action.definition.run(this.run.input as never, {
        step: (name, fn, options) => this.step(release, ctx, name, fn, options),
        sleep: (name, ms) => this.sleep(name, ms),
        ctx,
      });
    } catch (error) {
      thrown = error;
      // Unwinding (and a step's failure, logged where it happened) is the engine's own doing.
      if (!(error instanceof Unwind || error instanceof StepFailed)) this.logThrown("the workflow", error);
    }
    return this.conclude(action, returned, thrown);
  }

  private async conclude(action: LoadedWorkflow, returned: unknown, thrown: unknown): Promise<PassOutcome> {
    // The pass's last lines are stored before its end is, so whoever sees the end can read them.
    await this.log?.flush();
    const now = this.$.now();
    if (this.suspendedUntil !== null) return { kind: "suspended", wakeAt: this.suspendedUntil };
    if (this.halted === "shutdown" || this.halted === "lease_lost") return { kind: "released" };
    if (this.misuse !== null) return this.end(failed(this.misuse, now));
    if (this.halted === "canceled") return this.end(runCanceled(now));
    if (thrown !== null) return this.end(failed(messageOf(thrown), now));
    const stored = storableJson(returned, "/output", this.$.maxOutputBytes);
    if ("problem" in stored) return this.end(failed(`the workflow's output ${stored.problem}`, now));
    const [issue] = action.checkOutput(stored.value);
    if (issue) {
      return this.end(
        failed(`the workflow's output does not match its output schema: ${issue.where} ${issue.message}`, now),
      );
    }
    // Checked as returned, stored redacted (end redacts it): the stored output is the answer.
    return this.end({
      status: "succeeded",
      output: stored.value,
      errorCode: null,
      errorMessage: null,
      finishedAt: now,
    });
  }

  private async step<T>(
    release: LoadedRelease,
    ctx: WorkflowContext,
    name: string,
    fn: (ctx: StepContext) => Promise<T> | T,
    options: StepOptions = {},
  ): Promise<T> {
    const seq = this.enter(name, "step");
    const { retries = DEFAULT_RETRIES, backoffMs = DEFAULT_BACKOFF_MS } = options;
    if (!isCount(retries) || !isCount(backoffMs) || typeof fn !== "function") {
      throw this.misused(`step "${name}": fn must be a function, retries and backoffMs whole numbers ≥ 0`);
    }
    const prior = this.checkpoints.get(name);
    if (prior?.status === "succeeded") return prior.output as T;
    // A failure the workflow caught before answers the same way again, so the code takes the same path.
    if (prior?.status === "failed") throw new StepFailed(name, prior.error ?? "the step failed");

    const attempt = (prior?.attempts ?? 0) + 1;
    const startedAt = this.$.now();
    const row: StepRow = {
      runId: this.run.id,
      name,
      seq,
      kind: "step",
      status: "running",
      attempts: attempt,
      output: null,
      error: null,
      startedAt,
      finishedAt: null,
    };
    // Shows the attempt while it runs (and counts it if the process dies). Not waited for: only the
    // checkpoint decides anything, and the store never lets an attempt's start replace a later row.
    this.$.store.runs.saveStep(this.owner, row).catch((error) => this.logStoreError(error));

    const data = this.$.data.forExecution(this.principal, release, this.$.now);
    const span = this.$.telemetry.tracer.start(`step ${name}`, this.span, { "actuate.step.attempt": attempt });
    let value: unknown;
    try {
      const tools = scheduleTools({
        release,
        principal: this.principal,
        executionId: this.run.id,
        now: this.$.now,
        maxInputBytes: this.$.maxOutputBytes,
        record: data.record,
      });
      value = await this.stepName.run(name, () =>
        this.stepTools.run(tools, () => this.stepDb.run(data.db, () => fn({ ...ctx, db: data.db, ...tools, attempt }))),
      );
    } catch (error) {
      const message = redactText(this.redactor, messageOf(error));
      span.fail(message);
      span.end();
      if (this.halted !== null) throw new Unwind();
      this.logThrown(`step "${name}" attempt ${attempt}`, error, name);
      return this.attemptFailed(row, message, retries, backoffMs);
    }
    span.end();
    const stored = storableJson(value, "", this.$.maxOutputBytes);
    if ("problem" in stored) throw this.misused(`step "${name}"'s result ${stored.problem}`);
    // The checkpoint is the answer, on this pass as on every replay of it: the workflow's code gets the
    // redacted result both times, so it takes the same path (a secret is read from ctx.env, not passed on).
    const output = this.redactor === null ? stored.value : this.redactor.json(stored.value);

    const done: StepRow = { ...row, status: "succeeded", output, finishedAt: this.$.now() };
    const refused = await this.save(done, data.writes());
    if (refused !== null) return this.attemptFailed(row, refused, retries, backoffMs);
    this.$.data.changes.publish(data.touched());
    this.checkpoints.set(name, done);
    // A cancel asked while the step ran takes effect here, with the step's work recorded.
    if (this.halted !== null) throw new Unwind();
    return output as T;
  }

  /** Retries after a backoff (the run is suspended meanwhile), or records the failure and throws it. */
  private async attemptFailed(row: StepRow, reason: string, retries: number, backoffMs: number): Promise<never> {
    const message = redactText(this.redactor, reason);
    const now = this.$.now();
    if (row.attempts <= retries) {
      const wakeAt = now + backoffMs * 2 ** (row.attempts - 1);
      // The next attempt's time is kept in the step's row, as a sleep's end is, so a reader of the steps has it.
      const retrying: StepRow = {
        ...row,
        status: "retrying",
        output: { until: wakeAt },
        error: message,
        finishedAt: now,
      };
      return this.suspend("running", wakeAt, retrying);
    }
    const failedRow: StepRow = { ...row, status: "failed", error: message, finishedAt: now };
    await this.save(failedRow);
    this.checkpoints.set(row.name, failedRow);
    throw new StepFailed(row.name, message);
  }

  private async sleep(name: string, ms: number): Promise<void> {
    const seq = this.enter(name, "sleep");
    if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) {
      throw this.misused(`sleep "${name}": ms must be a finite number ≥ 0`);
    }
    const prior = this.checkpoints.get(name);
    if (prior?.status === "succeeded") return;
    const now = this.$.now();
    const until = prior ? (prior.output as { until: number }).until : now + ms;
    const row: StepRow = {
      runId: this.run.id,
      name,
      seq,
      kind: "sleep",
      status: "sleeping",
      attempts: 1,
      output: { until },
      error: null,
      startedAt: prior?.startedAt ?? now,
      finishedAt: null,
    };
    if (until > now) return this.suspend("sleeping", until, row);
    const woke: StepRow = { ...row, status: "succeeded", finishedAt: now };
    await this.save(woke);
    this.checkpoints.set(name, woke);
  }

  /** The checks every step and sleep starts with; answers the name's place in the run. */
  private enter(name: string, kind: StepRow["kind"]): number {
    if (this.suspendedUntil !== null || this.halted !== null || this.misuse !== null) throw new Unwind();
    if (typeof name !== "string" || name === "" || name.length > 200) {
      throw this.misused(`a ${kind} name must be a non-empty string of at most 200 characters`);
    }
    if (this.used.has(name)) throw this.misused(`the name "${name}" is used twice in this run`);
    this.used.add(name);
    const prior = this.checkpoints.get(name);
    if (prior && prior.kind !== kind) {
      throw this.misused(`"${name}" was a ${prior.kind} when the run last ran and is a ${kind} now`);
    }
    return this.seq++;
  }

  /**
   * Stores a step's row (and a succeeded step's data writes with it). Answers the reason when the database
   * refused the writes (the attempt fails); unwinds when the lease is gone or the store itself fails.
   */
  private async save(row: StepRow, writes: DataWrite[] = []): Promise<string | null> {
    let saved: StepSaved;
    const { tracer } = this.$.telemetry;
    const attributes = () => ({ "actuate.step.status": row.status, "actuate.db.data_writes": writes.length });
    const commit = tracer.enabled ? tracer.start(`db commit step ${row.name}`, this.span, attributes()) : NO_SPAN;
    try {
      saved = await this.$.store.runs.saveStep(this.owner, row, writes);
    } catch (error) {
      commit.fail(messageOf(error));
      throw this.storeFailed(error);
    } finally {
      commit.end();
    }
    if ("leaseLost" in saved) this.lost();
    return "refused" in saved ? saved.refused : null;
  }

  private async suspend(status: "running" | "sleeping", wakeAt: number, step: StepRow): Promise<never> {
    let suspended: Fenced;
    try {
      suspended = await this.$.store.runs.suspend(this.owner, this.run.id, { status, wakeAt, step, now: this.$.now() });
    } catch (error) {
      throw this.storeFailed(error);
    }
    if ("leaseLost" in suspended) this.lost();
    this.suspendedUntil = wakeAt;
    throw new Unwind();
  }

  /**
   * The run's release could not be loaded. The database away: the run is let go, and resumed once its
   * lease runs out. Anything else fails it, with a reason of ours: what the driver or the bundle said
   * is the server's, logged.
   */
  private releaseFailed(error: unknown): Promise<PassOutcome> {
    if (isDatabaseUnavailable(error)) {
      this.logStoreError(error);
      return Promise.resolve({ kind: "released" });
    }
    const reason = `the run's release ${this.run.releaseVersion} cannot be loaded`;
    this.$.log(`workflow run ${this.run.id}: ${reason}: ${loggable(error)}`, {
      level: "error",
      executionId: this.run.id,
    });
    return this.end(failed(reason, this.$.now()));
  }

  private async end(outcome: RunSettlement): Promise<PassOutcome> {
    const settlement = this.redacted(outcome);
    // Lease lost: another worker holds the run now, or a cancel ended it while it waited; either way not ours.
    const ended = await this.$.store.runs.finish(this.owner, this.run.id, settlement);
    if ("leaseLost" in ended) return { kind: "released" };
    return { kind: "ended", settlement };
  }

  /** The run's end as stored and told: its output and error message redacted. */
  private redacted(settlement: RunSettlement): RunSettlement {
    const { redactor } = this;
    if (redactor === null) return settlement;
    const output = redactor.json(settlement.output);
    const errorMessage = settlement.errorMessage === null ? null : redactor.text(settlement.errorMessage);
    if (output === settlement.output && errorMessage === settlement.errorMessage) return settlement;
    return { ...settlement, output, errorMessage };
  }

  private context(release: LoadedRelease): WorkflowContext {
    const { run } = this;
    return {
      auth: this.principal,
      env: this.variables.env,
      db: writesInSteps(this.$.data.forExecution(this.principal, release, this.$.now).db, () => this.stepDb.getStore()),
      execution: { id: run.id, requestId: run.requestId },
      run: { id: run.id },
      log: logger((level, line) => this.log?.write(level, line, this.stepName.getStore() ?? null)),
      signal: this.abort.signal,
      schedule: (...args) => {
        const tools = this.stepTools.getStore();
        return tools ? tools.schedule(...args) : Promise.reject(new Error(outsideStep("schedule")));
      },
      cancelScheduled: (id) => {
        const tools = this.stepTools.getStore();
        return tools ? tools.cancelScheduled(id) : Promise.reject(new Error(outsideStep("cancelScheduled")));
      },
    };
  }

  private lost(): never {
    this.halted = "lease_lost";
    throw new Unwind();
  }

  /** The store failed (not a write the database refused): let the run go; its lease expires and it is resumed. */
  private storeFailed(error: unknown): Unwind {
    this.logStoreError(error);
    this.halted = "lease_lost";
    return new Unwind();
  }

  private misused(message: string): Unwind {
    this.misuse ??= message;
    return new Unwind();
  }

  private executionLog(tally: LogTally | undefined): ExecutionLog {
    return new ExecutionLog(
      this.run.id,
      this.run.workflow,
      this.$,
      (error) => this.logStoreError(error),
      tally,
      this.redactor,
    );
  }

  /** Into the run's log (kept past its bounds) and so the server log: what threw, with its stack. */
  private logThrown(what: string, error: unknown, step: string | null = null) {
    const line = redactText(this.redactor, `${what} threw: ${thrownLine(error)}`);
    if (this.log) this.log.writeFinal(line, step);
    else
      this.$.log(`[${this.run.workflow} ${this.run.id}] ${line}`, {
        level: "error",
        executionId: this.run.id,
        action: this.run.workflow,
      });
  }

  private logStoreError(error: unknown) {
    this.failures.failed(error, { begun: this.begun, about: { executionId: this.run.id } });
  }
}

/**
 * The run's own `ctx.db`: reads anywhere; a write goes to the step whose function is running (and commits
 * with its checkpoint). Outside a step a write is refused: the run body replays, so it would repeat.
 */
function writesInSteps(reads: DataContext, currentStep: () => DataContext | undefined): DataContext {
  const write =
    <Verb extends Exclude<keyof DataContext, "query">>(verb: Verb) =>
    (...args: Parameters<DataContext[Verb]>) => {
      const db = currentStep();
      if (!db) return Promise.reject(new Error(outsideStep(`db.${verb}`)));
      return (db[verb] as (...a: Parameters<DataContext[Verb]>) => ReturnType<DataContext[Verb]>)(...args);
    };
  return {
    query: reads.query,
    create: write("create"),
    update: write("update"),
    delete: write("delete"),
    link: write("link"),
    unlink: write("unlink"),
  };
}

const outsideStep = (call: string) =>
  `ctx.${call} outside a step: a workflow's code outside steps runs again after every sleep or restart, ` +
  `so the write would repeat. Write inside a step, where it commits with the step's checkpoint: ` +
  `await step("save", () => ctx.${call}(…))`;

const failed = (message: string, at: number): RunSettlement => ({
  status: "failed",
  output: null,
  errorCode: "action_failed",
  errorMessage: message,
  finishedAt: at,
});

const isCount = (value: unknown) => typeof value === "number" && Number.isInteger(value) && value >= 0;
