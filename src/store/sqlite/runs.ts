import type { Database, Statement } from "bun:sqlite";
import type { DataWrite } from "../data.ts";
import { selectList } from "../drizzle/columns.ts";
import type { SharedDatabase, SharedTables } from "../drizzle/database.ts";
import { DrizzleRunReads } from "../drizzle/lists.ts";
import { type ExecutionRow, type InEnvironment, type RunRow, STORED_SIZES, type StepRow } from "../rows.ts";
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

type RawRun = Omit<RunRow, "principalClaims" | "input" | "output" | "cancelRequested"> & {
  principalClaims: string | null;
  input: string;
  output: string | null;
  cancelRequested: number;
};
type RawStep = Omit<StepRow, "output"> & { output: string | null };

/** A run as an environment's reads answer it (without its environment), and as claims do (with it). */
const RUN_COLUMNS = selectList(workflowRuns, undefined, [...STORED_SIZES, "environment"]);
const CLAIMED_RUN_COLUMNS = selectList(workflowRuns, undefined, STORED_SIZES);

const STEP_COLUMNS = selectList(workflowSteps, undefined, [...STORED_SIZES, "environment"]);

const HELD = `lease_owner = $owner`;
const MINE = `environment = $environment`;

/** What a run's admission needs of the executions (sqlite/executions.ts), in the run's environment. */
export interface AdmittingExecutions {
  findQueuedOrStored(environment: number, kind: string, id: string, requestId: string): ExecutionRow | null;
  /** Inserts inside the caller's transaction; answers the rowid to hand `admitted` once it has committed. */
  insertNow(environment: number, row: ExecutionRow): number;
  admitted(environment: number, row: ExecutionRow, rowid: number): void;
}

/**
 * Runs on SQLite, for every environment of the database: statements prepared once per process, each
 * operation one synchronous transaction. An environment's store (`environment(id)`) binds its id as a
 * parameter of these statements. One process serves a SQLite database, so nothing here needs to skip
 * locked rows; leases still fence every write, as on PostgreSQL, so the engine behaves the same on both.
 */
export class SqliteRuns {
  readonly insertRun: Statement;
  readonly byId: Statement<RawRun>;
  readonly stepsOf: Statement<RawStep>;
  readonly upsertStep: Statement;
  readonly isHeld: Statement<{ id: string }>;
  private readonly due: Statement<InEnvironment<RawRun>>;
  private readonly dueAcross: Statement<InEnvironment<RawRun>>;
  private readonly lease: Statement;
  private readonly startExecution: Statement;
  private readonly renewOne: Statement<{ id: string; cancelRequested: number }>;
  readonly suspendRun: Statement;
  private readonly finishRun: Statement;
  private readonly settleExecution: Statement;
  readonly flagCancel: Statement;
  private readonly cancelOpenSteps: Statement;
  private readonly releaseAll: Statement;

  constructor(
    private readonly client: Database,
    readonly executions: AdmittingExecutions,
    readonly data: SqliteDataWriter,
    /** Told of each commit, as the executions' group commit tells it (checkpoints/index.ts). */
    private readonly checkpoints: BackgroundCheckpoints | null = null,
  ) {
    // Sizes stored beside the values are measured from the statements' parameters, as in executions.ts.
    this.insertRun = client.prepare(
      `insert into workflow_runs (environment, id, request_id, workflow, release_version, principal_kind, principal_id,
        principal_claims, input, status, output, error_code, error_message, cancel_requested, lease_owner,
        lease_expires_at, wake_at, created_at, updated_at, finished_at, input_bytes)
       values ($environment, $id, $requestId, $workflow, $releaseVersion, $principalKind, $principalId, $principalClaims,
        $input, $status, null, null, null, 0, $leaseOwner, $leaseExpiresAt, $wakeAt, $createdAt, $updatedAt, null,
        octet_length($input))`,
    );
    this.byId = client.prepare(`select ${RUN_COLUMNS} from workflow_runs where id = $id and ${MINE}`);
    this.stepsOf = client.prepare(
      `select ${STEP_COLUMNS} from workflow_steps where run_id = $runId and ${MINE} order by seq`,
    );
    this.upsertStep = client.prepare(
      `insert into workflow_steps (environment, run_id, name, seq, kind, status, attempts, output, error, started_at,
        finished_at, output_bytes)
       values ($environment, $runId, $name, $seq, $kind, $status, $attempts, $output, $error, $startedAt, $finishedAt,
        octet_length($output))
       on conflict (run_id, name) do update set seq = excluded.seq, kind = excluded.kind, status = excluded.status,
        attempts = excluded.attempts, output = excluded.output, output_bytes = excluded.output_bytes,
        error = excluded.error, started_at = excluded.started_at, finished_at = excluded.finished_at
       where excluded.status <> 'running' or workflow_steps.attempts < excluded.attempts`,
    );
    this.isHeld = client.prepare(
      `select id from workflow_runs where id = $id and ${MINE} and ${HELD} and ${RUN_WAITING}`,
    );
    this.due = client.prepare(
      `select ${CLAIMED_RUN_COLUMNS} from workflow_runs
       where ${RUN_WAITING} and (wake_at <= $now or cancel_requested = 1)
         and (lease_expires_at is null or lease_expires_at < $now) and environment = $environment
       order by wake_at limit $limit`,
    );
    this.dueAcross = client.prepare(
      `select ${CLAIMED_RUN_COLUMNS} from workflow_runs
       where ${RUN_WAITING} and (wake_at <= $now or cancel_requested = 1)
         and (lease_expires_at is null or lease_expires_at < $now)
         and environment not in (select value from json_each($skip))
       order by wake_at limit $limit`,
    );
    this.lease = client.prepare(
      `update workflow_runs set lease_owner = $owner, lease_expires_at = $until, status = 'running', updated_at = $now
       where id = $id`,
    );
    this.startExecution = client.prepare(
      `update executions set status = 'running', started_at = $now where id = $id and ${MINE} and status = 'queued'`,
    );
    this.renewOne = client.prepare(
      `update workflow_runs set lease_expires_at = $until where id = $id and ${HELD} and ${RUN_WAITING}
       returning id, cancel_requested as cancelRequested`,
    );
    this.suspendRun = client.prepare(
      `update workflow_runs set status = $status, wake_at = $wakeAt, lease_owner = null, lease_expires_at = null,
        updated_at = $now
       where id = $id and ${MINE} and ${HELD} and ${RUN_WAITING}`,
    );
    this.finishRun = client.prepare(
      `update workflow_runs set status = $status, output = $output, output_bytes = octet_length($output),
        error_code = $errorCode, error_message = $errorMessage, lease_owner = null, lease_expires_at = null, updated_at = $finishedAt,
        finished_at = $finishedAt
       where id = $id and ${MINE} and ${RUN_WAITING}
        and (($owner is null and (lease_expires_at is null or lease_expires_at < $finishedAt)) or (${HELD}))`,
    );
    this.settleExecution = client.prepare(
      `update executions set status = $status, output = $output, output_bytes = octet_length($output),
        error_code = $errorCode, error_message = $errorMessage, finished_at = $finishedAt,
        started_at = coalesce(started_at, $finishedAt)
       where id = $id and ${MINE}`,
    );
    this.flagCancel = client.prepare(
      `update workflow_runs set cancel_requested = 1, updated_at = $now where id = $id and ${MINE} and ${RUN_WAITING}`,
    );
    this.cancelOpenSteps = client.prepare(
      `update workflow_steps set status = 'canceled', finished_at = $at
       where run_id = $runId and ${MINE} and status in ${OPEN_STEP}`,
    );
    this.releaseAll = client.prepare(
      `update workflow_runs set lease_owner = null, lease_expires_at = null where lease_owner = $owner and ${RUN_WAITING}`,
    );
  }

  /** Environment `environment`'s runs: no statement prepared, the id bound to the shared ones. */
  environment(environment: number, lists: { db: SharedDatabase; tables: SharedTables }): RunStore {
    return new SqliteRunStore(this, environment, lists);
  }

  /**
   * One transaction, after which the checkpoint thread is told the WAL has grown, unless `wrote` says
   * it wrote nothing (the idle poll for due runs must not start the thread).
   */
  commit<T>(work: () => T, wrote: (result: T) => boolean = () => true): T {
    const result = this.client.transaction(work)();
    if (wrote(result)) this.checkpoints?.committed();
    return result;
  }

  /** Due runs of `environment` (single mode's worker). */
  claim(environment: number, owner: string, now: number, leaseUntil: number, limit: number): InEnvironment<RunRow>[] {
    return this.leaseDue(this.due, { now, limit, environment }, owner, leaseUntil);
  }

  /** Due runs of every environment but `skip`'s (hosting mode's one worker poll for the process). */
  claimAcross(owner: string, now: number, leaseUntil: number, limit: number, skip: readonly number[]) {
    return this.leaseDue(this.dueAcross, { now, limit, skip: JSON.stringify(skip) }, owner, leaseUntil);
  }

  private leaseDue(
    due: Statement<InEnvironment<RawRun>>,
    params: Record<string, string | number>,
    owner: string,
    leaseUntil: number,
  ): InEnvironment<RunRow>[] {
    const now = params.now as number;
    return this.commit(
      () =>
        due.all(params).map((raw) => {
          this.lease.run({ id: raw.id, owner, until: leaseUntil, now });
          this.startExecution.run({ id: raw.id, environment: raw.environment, now });
          const run = parseRun({
            ...raw,
            status: "running",
            leaseOwner: owner,
            leaseExpiresAt: leaseUntil,
            updatedAt: now,
          });
          return { ...run, environment: raw.environment };
        }),
      (claimed) => claimed.length > 0,
    );
  }

  renew(owner: string, ids: string[], leaseUntil: number) {
    return this.commit(
      () =>
        ids.flatMap((id) => {
          const held = this.renewOne.get({ id, owner, until: leaseUntil });
          return held ? [{ id: held.id, cancelRequested: held.cancelRequested === 1 }] : [];
        }),
      (renewed) => renewed.length > 0,
    );
  }

  release(owner: string): void {
    this.releaseAll.run({ owner });
  }

  /** Frees every lease: at start-up no other process can hold one (one process serves a SQLite database). */
  releaseAllLeases(): number {
    return this.client.run(
      `update workflow_runs set lease_owner = null, lease_expires_at = null where lease_owner is not null and ${RUN_WAITING}`,
    ).changes;
  }

  /**
   * `owner` null: only a run no live lease holds. A canceled run's steps that ran or waited end canceled
   * with it. Inside the caller's transaction.
   */
  finishNow(environment: number, owner: string | null, runId: string, s: RunSettlement): boolean {
    const output = s.output === null || s.output === undefined ? null : JSON.stringify(s.output);
    const { changes } = this.finishRun.run({ id: runId, environment, owner, ...s, output });
    if (changes === 0) return false;
    this.settleExecution.run({ id: runId, environment, ...s, output });
    if (s.status === "canceled") this.cancelOpenSteps.run({ runId, environment, at: s.finishedAt });
    return true;
  }
}

/** One environment's runs: the shared statements of SqliteRuns with this environment's id bound. */
class SqliteRunStore extends DrizzleRunReads implements RunStore {
  constructor(
    private readonly runs: SqliteRuns,
    environment: number,
    lists: { db: SharedDatabase; tables: SharedTables },
  ) {
    super(lists, environment);
  }

  async admit(execution: ExecutionRow, run: RunRow) {
    const { executions } = this.runs;
    const existing = executions.findQueuedOrStored(
      this.environment,
      execution.principalKind,
      execution.principalId,
      execution.requestId,
    );
    if (existing) return { execution: existing, created: false };
    let rowid = 0;
    this.runs.commit(() => {
      rowid = executions.insertNow(this.environment, execution);
      this.runs.insertRun.run({
        ...run,
        environment: this.environment,
        principalClaims: jsonOrNull(run.principalClaims),
        input: JSON.stringify(run.input),
      });
    });
    executions.admitted(this.environment, execution, rowid);
    return { execution, created: true };
  }

  async get(id: string): Promise<RunRow | null> {
    const raw = this.runs.byId.get({ id, environment: this.environment });
    return raw ? parseRun(raw) : null;
  }

  async steps(runId: string): Promise<StepRow[]> {
    return this.runs.stepsOf.all({ runId, environment: this.environment }).map(parseStep);
  }

  async claim(owner: string, now: number, leaseUntil: number, limit: number) {
    return this.runs.claim(this.environment, owner, now, leaseUntil, limit);
  }

  async claimAcross(owner: string, now: number, leaseUntil: number, limit: number, skip: readonly number[] = []) {
    return this.runs.claimAcross(owner, now, leaseUntil, limit, skip);
  }

  async renew(owner: string, ids: string[], leaseUntil: number) {
    return this.runs.renew(owner, ids, leaseUntil);
  }

  async saveStep(owner: string, step: StepRow, writes: DataWrite[] = []): Promise<StepSaved> {
    const { runs, environment } = this;
    try {
      return runs.commit((): StepSaved => {
        if (!runs.isHeld.get({ id: step.runId, environment, owner })) return LEASE_LOST;
        runs.data.apply(environment, writes);
        runs.upsertStep.run(this.stepParams(step));
        return SAVED;
      });
    } catch (error) {
      return refusal(error);
    }
  }

  async suspend(owner: string, runId: string, { status, wakeAt, step, now }: Suspension): Promise<Fenced> {
    const { runs, environment } = this;
    return runs.commit((): Fenced => {
      const { changes } = runs.suspendRun.run({ id: runId, environment, owner, status, wakeAt, now });
      if (changes === 0) return LEASE_LOST;
      runs.upsertStep.run(this.stepParams(step));
      return SAVED;
    });
  }

  async finish(owner: string, runId: string, settlement: RunSettlement): Promise<Fenced> {
    return this.runs.commit(() =>
      this.runs.finishNow(this.environment, owner, runId, settlement) ? SAVED : LEASE_LOST,
    );
  }

  async requestCancel(runId: string, now: number): Promise<RunRow | null> {
    const { runs, environment } = this;
    return runs.commit(() => {
      runs.flagCancel.run({ id: runId, environment, now });
      // Unheld (queued, sleeping, backing off, or its worker died): nobody is there to stop it, so end it here.
      runs.finishNow(environment, null, runId, runCanceled(now));
      const raw = runs.byId.get({ id: runId, environment });
      return raw ? parseRun(raw) : null;
    });
  }

  async release(owner: string): Promise<void> {
    this.runs.release(owner);
  }

  private stepParams(step: StepRow) {
    return {
      ...step,
      environment: this.environment,
      output: step.output === undefined ? null : JSON.stringify(step.output),
    };
  }
}

const jsonOrNull = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

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
