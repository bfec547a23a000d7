import { uuidV7Floor } from "../lib/ids.ts";
import { InTurn } from "../lib/in-turn.ts";
import type { ExecutionListRow } from "../store/executions.ts";
import type { ExecutionRow } from "../store/rows.ts";
import type { RunListRow } from "../store/runs.ts";
import type { Upload } from "../wire/views.ts";
import type { ExecutionChange } from "./execution-feed.ts";
import { isTerminal, LIST_VALUE_BYTES } from "./executions.ts";
import type { EngineResources } from "./resources.ts";

/** The rows of the executions and runs lists that are new or changed since the last batch, with the executions' uploads. */
export interface ListChanges {
  executions: ExecutionListRow[];
  uploads: Map<string, Upload[]>;
  runs: RunListRow[];
  /** What each row was before, by id (executions' and runs' apart: a run shares its execution's id). */
  were: { executions: Map<string, Was>; runs: Map<string, Was> };
}

/**
 * The status a row was last sent in; null when the feed does not know it but a list may hold the row (made
 * before the feed began listening, or forgotten past the lookback). A row absent is new to every list.
 */
export type Was = string | null;

/** A row's state as last sent, its status, and how far it had come. */
interface Sent {
  state: string;
  status: string;
  progress: number;
}

/** How often the lists are read again while someone watches them: the bound for rows made on another instance. */
export const LIST_POLL_MS = 250;

/**
 * How far back each read looks: a row committed late (a group commit, another instance's clock) still
 * has an id this recent, so it is not missed for having an id older than the last read.
 */
const LOOKBACK_MS = 5_000;

/** Executions read per poll at most, and read one by one per pass of the feed's changes. */
const ROWS_PER_READ = 500;
/** Runs a poll reads (newest first), of which those updated within the lookback count: a list page shows 50. */
const RUNS_PER_READ = 100;
/** Clocks of other instances may lag: a row touched this much before the feed began listening is new too. */
const SEED_SLACK_MS = 1_000;

/** The statuses an execution or run is made in: a row first seen in another has been in one of these. */
const FIRST_STATUSES = new Set(["queued", "running"]);

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

/** How far an execution has come: a list never shows it going back (a slower read answering an older state). */
const executionProgress = (row: ExecutionRow) => (isTerminal(row.status) ? 2 : row.status === "running" ? 1 : 0);

/** A lane of passes: one at a time, and what arrives during one is read by one more right after. */
interface Lane {
  passing: boolean;
  again: boolean;
}

/**
 * What changes in the environment's executions and runs lists, for live lists (`subscribe-executions`,
 * `subscribe-runs`). Idle, and costing nothing, while nobody listens. While someone does, two lanes of
 * passes: every LIST_POLL_MS the executions made in the last LOOKBACK_MS (the list's index, newest first)
 * and the newest runs updated in it are read (rows made on another instance, claims nothing announces);
 * and at once, the rows the feed says changed: this process's status changes come with their row (no
 * read), other instances' (PostgreSQL NOTIFY on every update of `executions`) as ids to read. A row goes
 * out once per state, and never back to an earlier one.
 */
export class ListFeed {
  private readonly listeners = new Set<(changes: ListChanges) => void>();
  private readonly changed = new Map<string, ExecutionRow | null>();
  private readonly sentExecutions = new Map<string, Sent>();
  private readonly sentRuns = new Map<string, Sent>();
  private readonly polls: Lane = { passing: false, again: false };
  private readonly changes: Lane = { passing: false, again: false };
  /** The two lanes' batches go out in the order their states were noted as sent, whatever their uploads' reads. */
  private readonly deliveries = new InTurn();
  private stopWatching: (() => void) | null = null;
  private timer: Timer | null = null;
  private seeded = false;
  /** When the feed began listening. Its first poll announces the rows touched since (less SEED_SLACK_MS). */
  private listeningSince = 0;

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
    this.listeningSince = this.$.now();
    this.stopWatching = this.$.feed.watchAll((change) => this.heard(change));
    this.$.store.executions.watchLists(true);
    this.timer = setInterval(() => this.pass(this.polls, () => this.poll()), this.pollMs).unref();
    this.pass(this.polls, () => this.poll());
  }

  private stop() {
    this.stopWatching?.();
    this.stopWatching = null;
    this.$.store.executions.watchLists(false);
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
    this.pass(this.changes, () => this.readChanged());
  }

  private pass(lane: Lane, read: () => Promise<void>) {
    if (lane.passing) {
      lane.again = true;
      return;
    }
    lane.passing = true;
    read()
      .catch((error) => this.$.log(`live lists: a read failed: ${String(error)}`, { level: "warn" }))
      .finally(() => {
        lane.passing = false;
        if (lane.again && this.listeners.size > 0) {
          lane.again = false;
          this.pass(lane, read);
        }
      });
  }

  /** The rows the feed named: this process's as given, the others read by id. */
  private async readChanged() {
    const { store } = this.$;
    const given = new Map(this.changed);
    this.changed.clear();
    const executions = new Map<string, ExecutionListRow>();
    const toRead: string[] = [];
    for (const [id, row] of given) {
      if (row) executions.set(id, listed(row));
      else if (toRead.length < ROWS_PER_READ) toRead.push(id);
    }
    // One read for the lot. Of every environment on PostgreSQL: another's ids read nothing here.
    for (const read of await store.executions.getMany(toRead)) executions.set(read.id, listed(read));
    // Heard after the feed began listening: new to every listener, seeded or not.
    await this.announce(executions, await this.runsOf(executions, new Map()), null);
  }

  /** The recent rows of both lists; the first poll only learns what exists (a subscriber lists that itself). */
  private async poll() {
    const { store, now } = this.$;
    const since = now() - LOOKBACK_MS;
    const bounded = { limit: ROWS_PER_READ, maxValueBytes: LIST_VALUE_BYTES };
    const [recent, runs] = await Promise.all([
      store.executions.list({ sinceId: uuidV7Floor(since), ...bounded }),
      store.runs.list({ ...bounded, limit: RUNS_PER_READ }),
    ]);
    const executions = new Map(recent.map((row) => [row.id, row]));
    const runRows = await this.runsOf(
      executions,
      new Map(runs.filter((run) => run.updatedAt >= since).map((run) => [run.id, run])),
    );
    // The first poll learns what exists, and announces only what changed since the feed began listening
    // (a run that ended before this read came back was never announced otherwise).
    const touchedSince = this.seeded ? null : this.listeningSince - SEED_SLACK_MS;
    this.seeded = true;
    await this.announce(executions, runRows, touchedSince);
    forgetOthers(this.sentExecutions, executions);
    forgetOthers(this.sentRuns, runRows);
  }

  /** The runs of the workflow executions among these that `runs` lacks, read in one go, added to it. */
  private async runsOf(executions: Map<string, ExecutionListRow>, runs: Map<string, RunListRow>) {
    const missing = [...executions.values()].filter((row) => row.kind === "workflow" && !runs.has(row.id));
    const ids = missing.slice(0, ROWS_PER_READ).map((row) => row.id);
    for (const run of await this.$.store.runs.getManyBounded(ids, LIST_VALUE_BYTES)) runs.set(run.id, run);
    return runs;
  }

  /** Sends the rows in a state not sent yet; with `since`, only those touched since then (the others noted as sent). */
  private async announce(
    executions: Map<string, ExecutionListRow>,
    runs: Map<string, RunListRow>,
    since: number | null,
  ) {
    const touched = (times: (number | null)[]) => since === null || times.some((at) => at !== null && at >= since);
    // A row the feed has not sent may be on a list all the same: one made before the feed began listening,
    // or long enough ago to have been forgotten, or first seen past its first states (another instance's).
    const listedBefore = Math.max(this.listeningSince, this.$.now() - LOOKBACK_MS);
    const mayBeListed = (row: { createdAt: number; status: string }) =>
      row.createdAt < listedBefore || !FIRST_STATUSES.has(row.status);
    const were = { executions: new Map<string, Was>(), runs: new Map<string, Was>() };
    const newExecutions = [...executions.values()].filter((row) => {
      const state = { state: executionState(row), status: row.status, progress: executionProgress(row) };
      return (
        fresh(this.sentExecutions, were.executions, row.id, state, mayBeListed(row)) &&
        touched([row.createdAt, row.startedAt, row.finishedAt])
      );
    });
    const newRuns = [...runs.values()].filter((row) => {
      const state = { state: runState(row), status: row.status, progress: row.updatedAt };
      return fresh(this.sentRuns, were.runs, row.id, state, mayBeListed(row)) && touched([row.updatedAt]);
    });
    if ((newExecutions.length === 0 && newRuns.length === 0) || this.listeners.size === 0) return;
    // Otherwise a batch whose read of uploads came back sooner (a run's wake: no executions, no read)
    // would overtake an earlier one, and a list would be left showing an older state.
    await this.deliveries.run(this.$.files.uploadsOf(newExecutions.map((row) => row.id)), (uploads) => {
      const changes = { executions: newExecutions, uploads, runs: newRuns, were };
      for (const listener of this.listeners) listener(changes);
    });
  }
}

/**
 * Whether this state of the row was not sent yet and is no older than the last sent (and notes it as sent,
 * and in `were` what it was before: its last status sent, or null, unknown, when `mayBeListed`).
 */
function fresh(sent: Map<string, Sent>, were: Map<string, Was>, id: string, now: Sent, mayBeListed: boolean) {
  const before = sent.get(id);
  if (before && (before.state === now.state || now.progress < before.progress)) return false;
  sent.set(id, now);
  if (before) were.set(id, before.status);
  else if (mayBeListed) were.set(id, null);
  return true;
}

/** Rows a poll did not read have left the lookback: a later change of theirs comes by the feed (or a newer `updatedAt`). */
function forgetOthers(sent: Map<string, Sent>, read: Map<string, unknown>) {
  for (const id of sent.keys()) if (!read.has(id)) sent.delete(id);
}
