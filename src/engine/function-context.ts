import type { DataService } from "../data/service.ts";
import type { LoadedRelease } from "../release/load.ts";
import type { ActionContext, Principal } from "../sdk/index.ts";
import type { DataWrite } from "../store/data.ts";
import type { ExecutionRow } from "../store/rows.ts";
import type { ExecutionLog } from "./execution-log.ts";
import { logger } from "./log-line.ts";
import type { EngineResources } from "./resources.ts";
import { type ScheduleTools, scheduleTools } from "./schedules/delayed-context.ts";
import type { VariableSnapshot } from "./variable-snapshot.ts";

type ExecutionData = ReturnType<DataService["forExecution"]>;

/**
 * What a function's handler is given (`ctx`), each part made when the handler first reaches for it: most
 * handlers use one or two, and an invoke should not pay for a data context, a log, a signal and the
 * scheduling tools it never touches. The getters are the object's own, so `{ ...ctx }` still copies them.
 */
export class FunctionContext {
  private data: ExecutionData | null = null;
  private executionLog: ExecutionLog | null = null;
  private controller: AbortController | null = null;
  private abortedWith: unknown = undefined;
  private aborted = false;
  readonly ctx: ActionContext;
  /** The environment's variables as the invocation started: `ctx.env`, and the secrets to redact. */
  readonly variables: VariableSnapshot;

  constructor(
    private readonly row: ExecutionRow,
    private readonly release: LoadedRelease,
    private readonly principal: Principal,
    private readonly $: Pick<EngineResources, "data" | "now" | "maxOutputBytes" | "variables">,
    /** The runner's: the log opens when the handler first writes to it (redacting these variables' secrets). */
    private readonly openLog: (row: ExecutionRow, variables: VariableSnapshot) => ExecutionLog,
  ) {
    const self = this;
    let log: ActionContext["log"] | null = null;
    let tools: ScheduleTools | null = null;
    const scheduling = () => {
      tools ??= scheduleTools({
        release,
        principal,
        executionId: row.id,
        now: $.now,
        maxInputBytes: $.maxOutputBytes,
        record: (write: DataWrite) => self.dataContext().record(write),
      });
      return tools;
    };
    this.variables = $.variables();
    this.ctx = {
      auth: principal,
      env: this.variables.env,
      execution: { id: row.id, requestId: row.requestId },
      get db() {
        return self.dataContext().db;
      },
      get log() {
        log ??= logger((level, line) => self.log.write(level, line));
        return log;
      },
      get signal() {
        return self.signal();
      },
      schedule: (action, input, when) => scheduling().schedule(action, input, when),
      cancelScheduled: (id) => scheduling().cancelScheduled(id),
    };
  }

  /** The execution's log, opened on first use. */
  get log(): ExecutionLog {
    this.executionLog ??= this.openLog(this.row, this.variables);
    return this.executionLog;
  }

  /** The log if anything opened it (nothing to store otherwise). */
  get openedLog(): ExecutionLog | null {
    return this.executionLog;
  }

  /** The writes the handler made through `ctx.db` (and `ctx.schedule`), none if it never used them. */
  writes(): DataWrite[] {
    return this.data ? this.data.writes() : [];
  }

  /** The entities the handler's writes touch. */
  touched(): Iterable<string> {
    return this.data ? this.data.touched() : [];
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.abortedWith = reason;
    this.controller?.abort(reason);
  }

  private signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.abortedWith);
    }
    return this.controller.signal;
  }

  private dataContext(): ExecutionData {
    this.data ??= this.$.data.forExecution(this.principal, this.release, this.$.now);
    return this.data;
  }
}
