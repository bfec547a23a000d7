import type { Database, Statement } from "bun:sqlite";
import type { DataWrite } from "../data.ts";
import { selectList } from "../drizzle/columns.ts";
import type { SharedDatabase, SharedTables } from "../drizzle/database.ts";
import { DrizzleRunReads } from "../drizzle/lists.ts";
import { type ExecutionRow, type RunRow, STORED_SIZES, type StepRow } from "../rows.ts";
import {
  type Fenced,
  LEASE_LOST,
  type RunSettlement,
  type RunStore,
  runCanceled,
  SAVED,
  type StepSaved,
  type Suspension,
} from "../runs.ts";
import { workflowRuns, workflowSteps } from "../schema/sqlite.ts";
import { OPEN_STEP, RUN_WAITING } from "../status-sql.ts";
import { refusal } from "../write-failure.ts";
import type { BackgroundCheckpoints } from "./checkpoints/index.ts";
import type { SqliteDataWriter } from "./data-writes.ts";
import type { SqliteExecutionWriter } from "./executions.ts";

type RawRun = Omit<RunRow, "principalClaims" | "input" | "output" | "cancelRequested"> & {
  principalClaims: string | null;
  input: string;
  output: string | null;
  cancelRequested: number;
};
type RawStep = Omit<StepRow, "output"> & { output: string | null };

const RUN_COLUMNS = selectList(workflowRuns, undefined, STORED_SIZES);

const STEP_COLUMNS = selectList(workflowSteps, undefined, STORED_SIZES);

const HELD = `lease_owner = $owner`;

/**
 * Runs on SQLite: statements prepared once, each operation one synchronous transaction. One process
 * serves a SQLite database, so nothing here needs to skip locked rows; leases still fence every write,
 * as on PostgreSQL, so the engine behaves the same on both.
 */
export class SqliteRunStore extends DrizzleRunReads implements RunStore {
  private readonly insertRun: Statement;
  private readonly byId: Statement<RawRun>;
  private readonly stepsOf: Statement<RawStep>;
  private readonly upsertStep: Statement;
  private readonly isHeld: Statement<{ id: string }>;
  private readonly due: Statement<RawRun>;
  private readonly lease: Statement;
  private readonly startExecution: Statement;
  private readonly renewOne: Statement<{ id: string; cancelRequested: number }>;
  private readonly suspendRun: Statement;
  private readonly finishRun: Statement;
  private readonly settleExecution: Statement;
  private readonly flagCancel: Statement;
  private readonly cancelOpenSteps: Statement;
  private readonly releaseAll: Statement;

  constructor(
    private readonly client: Database,
    private readonly executions: SqliteExecutionWriter,
    private readonly data: SqliteDataWriter,
    lists: { db: SharedDatabase; tables: SharedTables },
    /** Told of each commit, as the executions' group commit tells it (checkpoints/index.ts). */
    private readonly checkpoints: BackgroundCheckpoints | null = null,
  ) {
    super(lists, 1 /* FIXME(env): DrizzleRunReads is bound to an environment */);
    // Sizes stored beside the values are measured from the statements' parameters, as in executions.ts.
    this.insertRun = client.prepare(
      `insert into workflow_runs (id, request_id, workflow, release_version, principal_kind, principal_id, principal_claims,
        input, status, output, error_code, error_message, cancel_requested, lease_owner, lease_expires_at, wake_at,
        created_at, updated_at, finished_at, input_bytes)
       values ($id, $requestId, $workflow, $releaseVersion, $principalKind, $principalId, $principalClaims, $input, $status,
        null, null, null, 0, $leaseOwner, $leaseExpiresAt, $wakeAt, $createdAt, $updatedAt, null, octet_length($input))`,
    );
    this.byId = client.prepare(`select ${RUN_COLUMNS} from workflow_runs where id = $id`);
    this.stepsOf = client.prepare(`select ${STEP_COLUMNS} from workflow_steps where run_id = $runId order by seq`);
    this.upsertStep = client.prepare(
      `insert into workflow_steps (run_id, name, seq, kind, status, attempts, output, error, started_at, finished_at,
        output_bytes)
       values ($runId, $name, $seq, $kind, $status, $attempts, $output, $error, $startedAt, $finishedAt,
        octet_length($output))
       on conflict (run_id, name) do update set seq = excluded.seq, kind = excluded.kind, status = excluded.status,
        attempts = excluded.attempts, output = excluded.output, output_bytes = excluded.output_bytes,
        error = excluded.error, started_at = excluded.started_at, finished_at = excluded.finished_at
       where excluded.status <> 'running' or workflow_steps.attempts < excluded.attempts`,
    );
    this.isHeld = client.prepare(`select id from workflow_runs where id = $id and ${HELD} and ${RUN_WAITING}`);
    this.due = client.prepare(
      `select ${RUN_COLUMNS} from workflow_runs
       where ${RUN_WAITING} and (wake_at <= $now or cancel_requested = 1)
         and (lease_expires_at is null or lease_expires_at < $now)
       order by wake_at limit $limit`,
    );
    this.lease = client.prepare(
      `update workflow_runs set lease_owner = $owner, lease_expires_at = $until, status = 'running', updated_at = $now
       where id = $id`,
    );
    this.startExecution = client.prepare(
      `update executions set status = 'running', started_at = $now where id = $id and status = 'queued'`,
    );
    this.renewOne = client.prepare(
      `update workflow_runs set lease_expires_at = $until where id = $id and ${HELD} and ${RUN_WAITING}
       returning id, cancel_requested as cancelRequested`,
    );
    this.suspendRun = client.prepare(
      `update workflow_runs set status = $status, wake_at = $wakeAt, lease_owner = null, lease_expires_at = null,
        updated_at = $now
       where id = $id and ${HELD} and ${RUN_WAITING}`,
    );
    this.finishRun = client.prepare(
      `update workflow_runs set status = $status, output = $output, output_bytes = octet_length($output),
        error_code = $errorCode, error_message = $errorMessage, lease_owner = null, lease_expires_at = null, updated_at = $finishedAt,
        finished_at = $finishedAt
       where id = $id and ${RUN_WAITING} and (($owner is null and (lease_expires_at is null or lease_expires_at < $finishedAt))
        or (${HELD}))`,
    );
    this.settleExecution = client.prepare(
      `update executions set status = $status, output = $output, output_bytes = octet_length($output),
        error_code = $errorCode, error_message = $errorMessage, finished_at = $finishedAt,
        started_at = coalesce(started_at, $finishedAt)
       where id = $id`,
    );
    this.flagCancel = client.prepare(
      `update workflow_runs set cancel_requested = 1, updated_at = $now where id = $id and ${RUN_WAITING}`,
    );
    this.cancelOpenSteps = client.prepare(
      `update workflow_steps set status = 'canceled', finished_at = $at where run_id = $runId and status in ${OPEN_STEP}`,
    );
    this.releaseAll = client.prepare(
      `update workflow_runs set lease_owner = null, lease_expires_at = null where lease_owner = $owner and ${RUN_WAITING}`,
    );
  }

  /**
   * One transaction, after which the checkpoint thread is told the WAL has grown, unless `wrote` says
   * it wrote nothing (the idle poll for due runs must not start the thread).
   */
  private commit<T>(work: () => T, wrote: (result: T) => boolean = () => true): T {
    const result = this.client.transaction(work)();
    if (wrote(result)) this.checkpoints?.committed();
    return result;
  }

  async admit(execution: ExecutionRow, run: RunRow) {
    const existing = this.executions.findQueuedOrStored(
      1 /* FIXME(env): the run's environment */,
      execution.principalKind,
      execution.principalId,
      execution.requestId,
    );
    if (existing) return { execution: existing, created: false };
    let rowid = 0;
    this.commit(() => {
      rowid = this.executions.insertNow(1 /* FIXME(env) */, execution);
      this.insertRun.run({
        ...run,
        principalClaims: jsonOrNull(run.principalClaims),
        input: JSON.stringify(run.input),
      });
    });
    this.executions.admitted(1 /* FIXME(env) */, execution, rowid);
    return { execution, created: true };
  }

  async get(id: string): Promise<RunRow | null> {
    const raw = this.byId.get({ id });
    return raw ? parseRun(raw) : null;
  }

  async steps(runId: string): Promise<StepRow[]> {
    return this.stepsOf.all({ runId }).map(parseStep);
  }

  async claim(owner: string, now: number, leaseUntil: number, limit: number): Promise<RunRow[]> {
    return this.commit(
      () =>
        this.due.all({ now, limit }).map((raw) => {
          this.lease.run({ id: raw.id, owner, until: leaseUntil, now });
          this.startExecution.run({ id: raw.id, now });
          return parseRun({ ...raw, status: "running", leaseOwner: owner, leaseExpiresAt: leaseUntil, updatedAt: now });
        }),
      (claimed) => claimed.length > 0,
    );
  }

  async renew(owner: string, ids: string[], leaseUntil: number) {
    return this.commit(
      () =>
        ids.flatMap((id) => {
          const held = this.renewOne.get({ id, owner, until: leaseUntil });
          return held ? [{ id: held.id, cancelRequested: held.cancelRequested === 1 }] : [];
        }),
      (renewed) => renewed.length > 0,
    );
  }

  async saveStep(owner: string, step: StepRow, writes: DataWrite[] = []): Promise<StepSaved> {
    try {
      return this.commit((): StepSaved => {
        if (!this.isHeld.get({ id: step.runId, owner })) return LEASE_LOST;
        this.data.apply(1 /* FIXME(env) */, writes);
        this.upsertStep.run(stepParams(step));
        return SAVED;
      });
    } catch (error) {
      return refusal(error);
    }
  }

  async suspend(owner: string, runId: string, { status, wakeAt, step, now }: Suspension): Promise<Fenced> {
    return this.commit((): Fenced => {
      const { changes } = this.suspendRun.run({ id: runId, owner, status, wakeAt, now });
      if (changes === 0) return LEASE_LOST;
      this.upsertStep.run(stepParams(step));
      return SAVED;
    });
  }

  async finish(owner: string, runId: string, settlement: RunSettlement): Promise<Fenced> {
    return this.commit(() => (this.finishNow(owner, runId, settlement) ? SAVED : LEASE_LOST));
  }

  async requestCancel(runId: string, now: number): Promise<RunRow | null> {
    return this.commit(() => {
      this.flagCancel.run({ id: runId, now });
      // Unheld (queued, sleeping, backing off, or its worker died): nobody is there to stop it, so end it here.
      this.finishNow(null, runId, runCanceled(now));
      const raw = this.byId.get({ id: runId });
      return raw ? parseRun(raw) : null;
    });
  }

  async release(owner: string): Promise<void> {
    this.releaseAll.run({ owner });
  }

  /** Frees every lease: at start-up no other process can hold one (one process serves a SQLite database). */
  releaseAllLeases(): number {
    return this.client.run(
      `update workflow_runs set lease_owner = null, lease_expires_at = null where lease_owner is not null and ${RUN_WAITING}`,
    ).changes;
  }

  /** `owner` null: only a run no live lease holds. A canceled run's steps that ran or waited end canceled with it. */
  private finishNow(owner: string | null, runId: string, s: RunSettlement): boolean {
    const output = s.output === null || s.output === undefined ? null : JSON.stringify(s.output);
    const { changes } = this.finishRun.run({ id: runId, owner, ...s, output });
    if (changes === 0) return false;
    this.settleExecution.run({ id: runId, ...s, output });
    if (s.status === "canceled") this.cancelOpenSteps.run({ runId, at: s.finishedAt });
    return true;
  }
}

const jsonOrNull = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

function stepParams(step: StepRow) {
  return { ...step, output: step.output === undefined ? null : JSON.stringify(step.output) };
}

function parseRun(raw: RawRun): RunRow {
  return {
    ...raw,
    principalClaims: raw.principalClaims === null ? null : JSON.parse(raw.principalClaims),
    input: JSON.parse(raw.input),
    output: raw.output === null ? null : JSON.parse(raw.output),
    cancelRequested: Boolean(raw.cancelRequested),
  };
}

function parseStep(raw: RawStep): StepRow {
  return { ...raw, output: raw.output === null ? null : JSON.parse(raw.output) };
}
