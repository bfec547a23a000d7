import { loggable } from "../lib/database-errors.ts";
import { messageOf } from "../lib/errors.ts";
import { storableJson } from "../lib/json-text.ts";
import { NO_SPAN, type SpanParent } from "../observe/tracing.ts";
import type { LoadedFunction, LoadedRelease } from "../release/load.ts";
import type { Principal } from "../sdk/index.ts";
import type { ExecutionSettlement } from "../store/executions.ts";
import type { ExecutionRow } from "../store/rows.ts";
import { ExecutionLog } from "./execution-log.ts";
import { FunctionContext } from "./function-context.ts";
import { thrownLine } from "./log-line.ts";
import { type Redactor, redactorFor, redactText } from "./redaction.ts";
import type { EngineResources } from "./resources.ts";
import type { VariableSnapshot } from "./variable-snapshot.ts";

const SETTLE_ATTEMPTS = 5;

/**
 * Runs handlers and records how they ended. Every execution started here is tracked until its final
 * status is stored, so a waiter in this process is told at once instead of polling.
 */
export class Runner {
  private readonly inFlight = new Map<string, { done: Promise<ExecutionRow>; context: FunctionContext }>();
  /** Opens a handler's log, redacting the secrets of its variables: one function for the runner, not one per invoke. */
  private readonly openLog = (row: ExecutionRow, variables: VariableSnapshot) =>
    this.executionLog(row, redactorFor(variables));

  constructor(
    private readonly $: Pick<
      EngineResources,
      "store" | "data" | "feed" | "log" | "now" | "telemetry" | "logLimits" | "maxOutputBytes" | "variables"
    >,
  ) {}

  start(
    row: ExecutionRow,
    release: LoadedRelease,
    action: LoadedFunction,
    principal: Principal,
    input: unknown,
    parent?: SpanParent,
  ): Promise<ExecutionRow> {
    const context = new FunctionContext(row, release, principal, this.$, this.openLog);
    // The variables the context read once (its ctx.env): the invocation redacts their secrets until it ends.
    const redactor = redactorFor(context.variables);
    const done = this.run(row, action, input, context, redactor, parent);
    this.inFlight.set(row.id, { done, context });
    return done;
  }

  private async run(
    row: ExecutionRow,
    action: LoadedFunction,
    input: unknown,
    context: FunctionContext,
    redactor: Redactor | null,
    parent: SpanParent | undefined,
  ): Promise<ExecutionRow> {
    const { telemetry } = this.$;
    const { tracer } = telemetry;
    const span = tracer.enabled
      ? tracer.start(`execute ${row.action}`, parent, { "actuate.action": row.action, "actuate.execution_id": row.id })
      : NO_SPAN;
    try {
      const settlement = await this.execute(action, input, context, redactor);
      // The lines not stored yet commit with the status: no round trip of their own. Lines stored
      // while it ran commit first, so whoever sees the end can read every line.
      const log = context.openedLog;
      const logs = log ? log.take() : [];
      if (log) await log.stored();
      const writes = settlement.status === "succeeded" ? context.writes() : [];
      const ended = writes.length > 0 ? { ...settlement, logs, writes } : { ...settlement, logs };
      // The database batch the outcome commits in (a group commit shared with other executions).
      const commit = tracer.enabled
        ? tracer.start("db commit outcome", span, {
            "actuate.db.data_writes": writes.length,
            "actuate.db.log_lines": logs.length,
          })
        : NO_SPAN;
      let stored: ExecutionRow;
      try {
        stored = await this.settle(row, ended);
      } finally {
        commit.end();
      }
      if (stored.status === "succeeded" && writes.length > 0) this.$.data.changes.publish(context.touched());
      this.$.feed.publish(row.id, { type: "status", execution: stored });
      telemetry.executionEnded(stored);
      span.setAttributes({ "actuate.status": stored.status });
      if (stored.status !== "succeeded") span.fail(stored.errorMessage ?? stored.status);
      return stored;
    } finally {
      span.end();
      this.inFlight.delete(row.id);
    }
  }

  /** Resolves once no handler runs here (those started meanwhile included). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight.values()].map((p) => p.done));
  }

  /** Aborts every handler's signal and waits (up to `graceMs`) for their final status to be stored. */
  async drain(graceMs: number): Promise<void> {
    const pending = [...this.inFlight.values()];
    for (const { context } of pending) context.abort(new Error("the server is shutting down"));
    await Promise.race([Promise.allSettled(pending.map((p) => p.done)), Bun.sleep(graceMs)]);
  }

  private executionLog(row: ExecutionRow, redactor: Redactor | null = null): ExecutionLog {
    return new ExecutionLog(
      row.id,
      row.action,
      this.$,
      (error) =>
        this.$.log(`could not store log lines of execution ${row.id}: ${loggable(error)}`, {
          level: "warn",
          executionId: row.id,
        }),
      undefined,
      redactor,
    );
  }

  /**
   * Runs the handler; a failure's log ends with why (the stack when it threw), its errorMessage stays the
   * message. The output is checked as returned and stored redacted: the stored output is the answer.
   */
  private async execute(
    action: LoadedFunction,
    input: unknown,
    context: FunctionContext,
    redactor: Redactor | null,
  ): Promise<ExecutionSettlement> {
    let returned: unknown;
    try {
      returned = await action.definition.handler(input as never, context.ctx);
    } catch (error) {
      return this.failed(context, redactor, messageOf(error), `the handler threw: ${thrownLine(error)}`);
    }
    const stored = storableJson(returned, "/output", this.$.maxOutputBytes);
    if ("problem" in stored) return this.failed(context, redactor, `the action's output ${stored.problem}`);
    const issues = action.checkOutput(stored.value);
    if (issues.length > 0) {
      const first = issues[0];
      const message = `the action's output does not match its output schema: ${first?.where} ${first?.message}`;
      return this.failed(context, redactor, message);
    }
    const output = redactor === null ? stored.value : redactor.json(stored.value);
    return { status: "succeeded", output, errorCode: null, errorMessage: null, finishedAt: this.$.now() };
  }

  /** A failed end: `message` is its errorMessage, `line` (the stack, when it threw) ends its log; both redacted. */
  private failed(
    context: FunctionContext,
    redactor: Redactor | null,
    message: string,
    line = message,
  ): ExecutionSettlement {
    context.log.writeFinal(line);
    return {
      status: "failed",
      output: null,
      errorCode: "action_failed",
      errorMessage: redactText(redactor, message),
      finishedAt: this.$.now(),
    };
  }

  /**
   * Stores the final status, retrying a failing store. If the outcome itself cannot be stored, the
   * execution is recorded as failed with the reason, so it never stays `running` for ever. Resolves to
   * the row as stored (still `running` only if the store refused every write).
   */
  private async settle(row: ExecutionRow, settlement: ExecutionSettlement): Promise<ExecutionRow> {
    for (let attempt = 1; attempt <= SETTLE_ATTEMPTS; attempt++) {
      try {
        const { writes: _, logs: __, ...stored } = await this.$.store.executions.settle(row.id, settlement);
        return { ...row, ...stored };
      } catch (error) {
        this.$.log(`could not record the end of execution ${row.id} (attempt ${attempt}): ${loggable(error)}`, {
          level: "error",
          executionId: row.id,
        });
        if (attempt < SETTLE_ATTEMPTS) await Bun.sleep(50 * 2 ** attempt);
      }
    }
    if (settlement.status === "succeeded") {
      // Why is in the log (above): what the store said is the server's, not the caller's.
      return this.settle(row, {
        ...settlement,
        status: "failed",
        output: null,
        errorCode: "action_failed",
        errorMessage: "the output could not be stored",
      });
    }
    return row;
  }
}
