import { uuidV7Floor } from "../lib/ids.ts";
import type { ExecutionListRow } from "../store/executions.ts";
import type { ExecutionRow } from "../store/rows.ts";
import type { RunListRow } from "../store/runs.ts";
import type { Upload } from "../wire/views.ts";
import type { ExecutionChange } from "./execution-feed.ts";
import { LIST_VALUE_BYTES } from "./executions.ts";
import type { EngineResources } from "./resources.ts";

/** The rows of the executions and runs lists that are new or changed since the last batch, with the executions' uploads. */
export interface ListChanges {
  executions: ExecutionListRow[];
  uploads: Map<string, Upload[]>;
  runs: RunListRow[];
}

/** How often the lists are read again while someone watches them: the bound for rows made on another instance. */
export const LIST_POLL_MS = 250;

/**
 * How far back each read looks: a row committed late (a group commit, another instance's clock) still
 * has an id this recent, so it is not missed for having an id older than the last read.
 */
const LOOKBACK_MS = 5_000;

/** Rows read per list at most, and executions read one by one per pass (changed ones older than the lookback). */
const ROWS_PER_READ = 500;

const bytes = (value: unknown) =>
  value === null || value === undefined ? 0 : Buffer.byteLength(JSON.stringify(value));

/** A row read whole, sized as a list would read it (so a view leaves out the same large values). */
const listed = (row: ExecutionRow): ExecutionListRow => ({
  ...row,
  inputBytes: bytes(row.input),
  outputBytes: bytes(row.output),
  errorMessageBytes: row.errorMessage ? Buffer.byteLength(row.errorMessage) : 0,
});

const executionState = (row: ExecutionRow) => `${row.status}\u0000${row.startedAt}\u0000${row.finishedAt}`;
const runState = (row: RunListRow) => `${row.status}\u0000${row.updatedAt}`;

/**
 * What changes in the environment's executions and runs lists, for live lists (`subscribe-executions`,
 * `subscribe-runs`). Idle, and costing nothing, while nobody listens; while someone does, each pass reads
 * the executions made in the last LOOKBACK_MS (the list's index, newest first) and the newest runs updated
 * in it every LIST_POLL_MS, and at once
 * the rows the feed says changed: this process's status changes come with their row, other instances'
 * (PostgreSQL NOTIFY on every update of `executions`) as ids to read. A row goes out once per state.
 */
export class ListFeed {
  private readonly listeners = new Set<(changes: ListChanges) => void>();
  private readonly changed = new Map<string, ExecutionRow | null>();
  private readonly sentExecutions = new Map<string, string>();
  private readonly sentRuns = new Map<string, string>();
  private stopWatching: (() => void) | null = null;
  private timer: Timer | null = null;
  private passing: Promise<void> | null = null;
  private again = false;
  private seeded = false;

  constructor(
    private readonly $: Pick<EngineResources, "store" | "feed" | "files" | "now" | "log">,
    private readonly pollMs = LIST_POLL_MS,
  ) {}

  subscribe(listener: (changes: ListChanges) => void): () => void {
    this.listeners.add(listener);
    if (this.listeners.size === 1) this.start();
    return () => {
      if (this.listeners.delete(listener) && this.listeners.size === 0) this.stop();
    };
  }

  private start() {
    this.stopWatching = this.$.feed.watchAll((change) => this.heard(change));
    this.timer = setInterval(() => this.pass(), this.pollMs).unref();
    this.pass();
  }

  private stop() {
    this.stopWatching?.();
    this.stopWatching = null;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.changed.clear();
    this.seeded = false;
    this.sentExecutions.clear();
    this.sentRuns.clear();
  }

  private heard({ id, row }: ExecutionChange) {
    // A row given by this process is the newest; an id alone must not replace it with "read it".
    if (row || !this.changed.has(id)) this.changed.set(id, row ?? null);
    this.pass();
  }

  /** One pass at a time; what arrives during one is read by one more right after. */
  private pass() {
    if (this.passing) {
      this.again = true;
      return;
    }
    this.passing = this.read()
      .catch((error) => this.$.log(`live lists: a read failed: ${String(error)}`, { level: "warn" }))
      .finally(() => {
        this.passing = null;
        if (this.again && this.listeners.size > 0) {
          this.again = false;
          this.pass();
        }
      });
  }

  private async read() {
    // The first pass only learns what exists: a subscriber lists that itself, only changes are news.
    const announce = this.seeded;
    this.seeded = true;
    const { store, now } = this.$;
    const sinceId = uuidV7Floor(now() - LOOKBACK_MS);
    const given = new Map(this.changed);
    this.changed.clear();
    const bounded = { limit: ROWS_PER_READ, maxValueBytes: LIST_VALUE_BYTES };
    const [recent, runs] = await Promise.all([
      store.executions.list({ sinceId, ...bounded }),
      store.runs.list(bounded),
    ]);
    const executions = new Map(recent.map((row) => [row.id, row]));
    let reads = 0;
    for (const [id, row] of given) {
      if (row) executions.set(id, listed(row));
      else if (!executions.has(id) && reads++ < ROWS_PER_READ) {
        // Of every environment on PostgreSQL: another's id reads nothing here.
        const read = await store.executions.get(id);
        if (read) executions.set(id, listed(read));
      }
    }
    const since = now() - LOOKBACK_MS;
    const runRows = new Map(
      runs.filter((run) => run.updatedAt >= since || given.has(run.id)).map((run) => [run.id, run]),
    );
    for (const row of executions.values()) {
      if (row.kind !== "workflow" || runRows.has(row.id)) continue;
      const run = await store.runs.getBounded(row.id, LIST_VALUE_BYTES);
      if (run) runRows.set(run.id, run);
    }
    const newExecutions = [...executions.values()].filter((row) =>
      fresh(this.sentExecutions, row.id, executionState(row)),
    );
    const newRuns = [...runRows.values()].filter((row) => fresh(this.sentRuns, row.id, runState(row)));
    forgetOthers(this.sentExecutions, executions);
    forgetOthers(this.sentRuns, runRows);
    if (!announce || (newExecutions.length === 0 && newRuns.length === 0) || this.listeners.size === 0) return;
    const uploads = await this.$.files.uploadsOf(newExecutions.map((row) => row.id));
    const changes = { executions: newExecutions, uploads, runs: newRuns };
    for (const listener of this.listeners) listener(changes);
  }
}

/** Whether this state of the row was not sent yet (and notes it as sent). */
function fresh(sent: Map<string, string>, id: string, state: string): boolean {
  if (sent.get(id) === state) return false;
  sent.set(id, state);
  return true;
}

/** Rows this pass did not read have left the lookback: a later change of theirs comes by the feed (or a newer `updatedAt`). */
function forgetOthers(sent: Map<string, string>, read: Map<string, unknown>) {
  for (const id of sent.keys()) if (!read.has(id)) sent.delete(id);
}
