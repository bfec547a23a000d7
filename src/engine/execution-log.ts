import type { LogTally } from "../store/execution-logs.ts";
import type { LogRow } from "../store/rows.ts";
import type { LogLevel } from "../store/statuses.ts";
import type { LogLine } from "../wire/views.ts";
import type { Redactor } from "./redaction.ts";
import type { EngineResources } from "./resources.ts";

/** How much of its log one execution keeps (EXECUTION_LOG_LINES, EXECUTION_LOG_BYTES); then one `truncated` line. */
export interface LogLimits {
  lines: number;
  bytes: number;
}

export const DEFAULT_LOG_LIMITS: LogLimits = { lines: 1_000, bytes: 256 * 1024 };

/** The last line of a failed execution (its error and stack) is kept whatever the bounds, cut to this. */
const FINAL_LINE_BYTES = 16 * 1024;

/**
 * The lines one execution logs: numbered in the order written, bounded, and handed to the store at the
 * end of each turn of the event loop (so a crash loses at most the last turn's), unless the execution
 * ends first, when `take()` hands them to its settlement and they commit with its status.
 */
export class ExecutionLog {
  private pending: LogRow[] = [];
  private lines: number;
  private bytes: number;
  private nextSeq: number;
  private truncated = false;
  private scheduled = false;
  private closed = false;
  /** Lines handed to the store and not yet committed. */
  private readonly storing = new Set<Promise<void>>();

  /**
   * Each line written is told to the server log (named by the execution's `action` or workflow) and to
   * this process's followers at once, and stored at the end of the turn; `failed` is told when storing
   * lines failed (the execution goes on, its log misses them). With a `redactor` (the environment has
   * secrets) every line is redacted before anything else sees it, its bounds included.
   */
  constructor(
    private readonly executionId: string,
    private readonly action: string,
    private readonly $: Pick<EngineResources, "store" | "feed" | "log" | "now" | "logLimits">,
    private readonly failed: (error: unknown) => void,
    start: LogTally = { lines: 0, bytes: 0, nextSeq: 0 },
    private readonly redactor: Redactor | null = null,
  ) {
    this.lines = start.lines;
    this.bytes = start.bytes;
    this.nextSeq = start.nextSeq;
    this.truncated = start.lines > $.logLimits.lines || start.bytes > $.logLimits.bytes;
  }

  write(level: LogLevel, written: string, step: string | null = null): void {
    if (this.truncated || this.closed) return;
    const text = this.redactor === null ? written : this.redactor.text(written);
    const size = Buffer.byteLength(text);
    if (this.lines >= this.$.logLimits.lines || this.bytes + size > this.$.logLimits.bytes) {
      this.truncated = true;
      const { lines, bytes } = this.$.logLimits;
      this.add("warn", `log truncated: an execution keeps at most ${lines} lines and ${bytes} bytes of log`, step);
      return;
    }
    this.lines++;
    this.bytes += size;
    this.add(level, text, step);
  }

  /** The error line a failed execution's log ends with: kept past the bounds, cut to FINAL_LINE_BYTES. */
  writeFinal(written: string, step: string | null = null): void {
    if (this.closed) return;
    // Redacted before the cut: a cut through a secret's value would leave its start unrecognised.
    const text = this.redactor === null ? written : this.redactor.text(written);
    const cut = Buffer.byteLength(text) > FINAL_LINE_BYTES ? `${cutUtf8(text, FINAL_LINE_BYTES)}…` : text;
    this.add("error", cut, step);
  }

  /** The lines not yet handed to the store; no line is stored after this (the execution ends). */
  take(): LogRow[] {
    this.closed = true;
    const lines = this.pending;
    this.pending = [];
    return lines;
  }

  /** Hands the pending lines to the store now (a workflow pass ending); resolves once every line handed over is committed. */
  async flush(): Promise<void> {
    const lines = this.pending;
    this.pending = [];
    if (lines.length > 0) this.store(lines);
    await this.stored();
  }

  /** Resolves once the lines handed to the store earlier are committed (or failed), so an end is never seen before them. */
  async stored(): Promise<void> {
    while (this.storing.size > 0) await Promise.allSettled([...this.storing]);
  }

  private store(lines: LogRow[]) {
    const storing = this.$.store.executionLogs
      .append(lines)
      .catch(this.failed)
      .finally(() => this.storing.delete(storing));
    this.storing.add(storing);
  }

  private add(level: LogLevel, line: string, step: string | null) {
    const row: LogRow = { executionId: this.executionId, seq: this.nextSeq++, at: this.$.now(), level, step, line };
    this.pending.push(row);
    const { executionId, action } = this;
    this.$.log(`[${action} ${executionId}] ${line}`, { level, executionId, action });
    this.$.feed.publish(executionId, { type: "log", executionId, line, at: row.at, seq: row.seq });
    this.schedule();
  }

  private schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.closed || this.pending.length === 0) return;
      const lines = this.pending;
      this.pending = [];
      this.store(lines);
    });
  }
}

function cutUtf8(text: string, bytes: number): string {
  const buffer = Buffer.from(text);
  // Decoding a cut in the middle of a character leaves a replacement character; drop it.
  return buffer
    .subarray(0, bytes)
    .toString()
    .replace(/\uFFFD$/, "");
}

/** A stored line as the API shows it. */
export type LogLineView = LogLine;

export const toLogLineView = (row: LogRow): LogLineView => ({
  seq: row.seq,
  at: new Date(row.at).toISOString(),
  level: row.level,
  step: row.step,
  line: row.line,
});
