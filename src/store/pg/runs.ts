import type { ParameterOrJSON, Row, Sql } from "postgres";
import type { DataWrite } from "../data.ts";
import { selectList } from "../drizzle/columns.ts";
import type { SharedDatabase, SharedTables } from "../drizzle/database.ts";
import { DrizzleRunReads } from "../drizzle/lists.ts";
import type { ExecutionStore } from "../executions.ts";
import { type ExecutionRow, type RunRow, STORED_SIZES, type StepRow } from "../rows.ts";
import {
  type ClaimedRun,
  type Fenced,
  LEASE_LOST,
  type RunSettlement,
  type RunStore,
  runCanceled,
  SAVED,
  type StepSaved,
  type Suspension,
} from "../runs.ts";
import { workflowRuns, workflowSteps } from "../schema/pg.ts";
import { OPEN_STEP, RUN_WAITING } from "../status-sql.ts";
import { refusal } from "../write-failure.ts";
import type { BatchRetries } from "./batch-retries.ts";
import { applyDataWrites } from "./data-writes.ts";
import { Lane, type Queued, totalLoad, type WriteLoad } from "./lane.ts";
import type { ListWatchers } from "./list-watchers.ts";
import { byText, requestKey } from "./lock-order.ts";
import { pipelined } from "./pipeline.ts";

type Params = ParameterOrJSON<never>[];

/** A run as an environment's reads answer it (without its environment), and as claims do (with it). */
const RUN_COLUMNS = selectList(workflowRuns, undefined, [...STORED_SIZES, "environment"]);
const CLAIMED_RUN_COLUMNS = selectList(workflowRuns, undefined, STORED_SIZES);

const STEP_COLUMNS = selectList(workflowSteps, undefined, [...STORED_SIZES, "environment"]);

// jsonb parameters travel as text (`::text::jsonb`), as in executions.ts, and the sizes stored beside them
// are the texts' (octet_length reads a text's length from its header; a jsonb would have to be printed).
// $19 is the environment: a request key is taken within it.
const ADMIT = `with e as (
    insert into executions (environment, id, request_id, principal_kind, principal_id, action, kind, release_version,
      contract_hash, input_fingerprint, input, status, output, error_code, error_message, created_at, started_at,
      finished_at, scheduled_by, input_bytes)
    values ($19, $1, $2, $3, $4, $5, 'workflow', $6, $7, $8, $9::text::jsonb, $10, null, null, null, $11, $12, null,
      $18, octet_length($9::text))
    on conflict (environment, principal_kind, principal_id, request_id) do nothing
    returning id
  )
  insert into workflow_runs (environment, id, request_id, workflow, release_version, principal_kind, principal_id,
    principal_claims, input, status, cancel_requested, lease_owner, lease_expires_at, wake_at, created_at, updated_at,
    input_bytes)
  select $19, e.id, $2, $5, $6, $3, $4, $17::text::jsonb, $9::text::jsonb, $13, false, $14, $15, $16, $11, $11,
    octet_length($9::text) from e
  returning id`;

/**
 * A step row of the environment `$environment` from the ten parameters from `$first` on (stepValues),
 * inserted when `condition` holds.
 */
const upsertStep = (first: number, environment: string, condition: string) => {
  const $ = (i: number) => `$${first + i}`;
  return `insert into workflow_steps (environment, run_id, name, seq, kind, status, attempts, output, error,
    started_at, finished_at, output_bytes)
  select ${environment}, ${$(0)}, ${$(1)}, ${$(2)}, ${$(3)}, ${$(4)}, ${$(5)}, ${$(6)}::text::jsonb, ${$(7)}, ${$(8)},
    ${$(9)}, octet_length(${$(6)}::text)
  ${condition}
  on conflict (run_id, name) do update set seq = excluded.seq, kind = excluded.kind, status = excluded.status,
    attempts = excluded.attempts, output = excluded.output, output_bytes = excluded.output_bytes,
    error = excluded.error, started_at = excluded.started_at, finished_at = excluded.finished_at
  where excluded.status <> 'running' or workflow_steps.attempts < excluded.attempts`;
};

// Answers the run when held (whether or not an attempt's start was superseded), locked till commit: a
// claim (skip locked) cannot take the run over while the step is written. $11 the owner, $12 the environment.
const UPSERT_STEP = `with held as (
    select id from workflow_runs where id = $1 and environment = $12 and lease_owner = $11 and ${RUN_WAITING}
    for update
  ), step as (
    ${upsertStep(1, "$12", "from held")}
  )
  select id from held`;

// Skip locked: two instances claiming at once take different runs instead of waiting on each other.
// Service-wide: the due runs of every environment, each answered with its environment.
// `takenFrom`: the owner of an expired lease this claim took over (read before the update, in `due`).
const CLAIM = `with due as (
    select id, environment, lease_owner as taken_from from workflow_runs
    where ${RUN_WAITING} and (wake_at <= $1 or cancel_requested)
      and (lease_expires_at is null or lease_expires_at < $1) and environment = $5
    order by wake_at
    limit $4
    for update skip locked
  ), leased as (
    update workflow_runs r set lease_owner = $2, lease_expires_at = $3, status = 'running', updated_at = $1
    from due where r.id = due.id
    returning r.*, due.taken_from
  ), started as (
    update executions x set status = 'running', started_at = $1
    from due where x.id = due.id and x.environment = due.environment and x.status = 'queued'
  )
  select ${CLAIMED_RUN_COLUMNS}, taken_from as "takenFrom" from leased`;

/** CLAIM over every environment but those listed in $5 (comma-separated ids): the hosting process's one claim. */
const CLAIM_ACROSS = CLAIM.replace("and environment = $5", "and environment <> all(string_to_array($5, ',')::int[])");

// Many runs in one statement (a heartbeat, a release): locked by id first (lock-order.ts), or a lane's
// batch holding one of them and waiting for another would wait in a circle with it.
const RENEW = `with held as (
    select id from workflow_runs
    where id = any(string_to_array($1::text, ',')) and lease_owner = $2 and ${RUN_WAITING}
    order by id collate "C"
    for update
  )
  update workflow_runs r set lease_expires_at = $3
  from held where r.id = held.id
  returning r.id, r.cancel_requested as "cancelRequested"`;

const RELEASE = `with held as (
    select id from workflow_runs where lease_owner = $1 and ${RUN_WAITING} order by id collate "C" for update
  )
  update workflow_runs r set lease_owner = null, lease_expires_at = null
  from held where r.id = held.id`;

// One statement, so one transaction: the step row is written only if the run was still held and is now let go.
// $16 the environment.
const SUSPEND = `with r as (
    update workflow_runs set status = $3, wake_at = $4, lease_owner = null, lease_expires_at = null, updated_at = $5
    where id = $1 and environment = $16 and lease_owner = $2 and ${RUN_WAITING}
    returning id
  ), step as (
    ${upsertStep(6, "$16", "from r")}
  )
  select id from r`;

// $7 null: end only a run that no live lease holds (a cancel of a waiting run). A canceled run's steps
// that were running or waiting end canceled with it. $8 the environment.
const FINISH = `with r as (
    update workflow_runs set status = $2, output = $3::text::jsonb, output_bytes = octet_length($3::text),
      error_code = $4, error_message = $5, lease_owner = null, lease_expires_at = null, updated_at = $6,
      finished_at = $6
    where id = $1 and environment = $8 and ${RUN_WAITING}
      and (($7::text is null and (lease_expires_at is null or lease_expires_at < $6)) or lease_owner = $7)
    returning id
  ), open_steps as (
    update workflow_steps s set status = 'canceled', finished_at = $6
    from r where s.run_id = r.id and s.environment = $8 and $2 = 'canceled' and s.status in ${OPEN_STEP}
  )
  update executions x set status = $2, output = $3::text::jsonb, output_bytes = octet_length($3::text),
    error_code = $4, error_message = $5, finished_at = $6, started_at = coalesce(x.started_at, $6)
  from r where x.id = r.id and x.environment = $8
  returning x.id`;

interface PendingWrite extends Queued {
  runId: string;
  /** An admission's (lock-order.ts `requestKey`): it inserts the key before any run row is locked. */
  requestKey?: string;
  sql: string;
  params: Params;
  resolve: (rows: Row[]) => void;
  /** For an attempt's start: its step, whose next row supersedes it if that comes before it is sent. */
  startOf?: string;
  superseded?: boolean;
}

/**
 * Lanes write in parallel; all writes of one run go through the same lane, in order, and the rows of
 * different runs are disjoint, so two lanes' transactions do not wait on each other. What else locks
 * runs (a heartbeat, a release) or request keys (another instance's admissions) takes its locks in the
 * order a batch takes them (lock-order.ts).
 */
const LANES = 4;

const PREPARED = { prepare: true };

/**
 * Runs on PostgreSQL, for every environment of the database. The writes of a run's life (admission,
 * checkpoints, suspensions, ends) are single statements, so the ones queued on a lane while its previous
 * batch commits go out together as one pipelined transaction: one commit (one WAL flush) for every run of
 * that lane progressing at that moment, whatever their environments (each statement carries its own). A
 * step with data writes takes a transaction of its own, since its writes and its checkpoint commit
 * together or not at all. An environment's store (`environment(id)`) binds its id to these statements.
 */
export class PgRuns {
  private readonly lanes = Array.from(
    { length: LANES },
    () =>
      new Lane<PendingWrite>((batch) => this.writeBatch(batch), {
        maxItems: 200,
        maxWeight: 4 * 1024 * 1024,
        weigh: (item) => item.params.reduce<number>((n, p) => n + (typeof p === "string" ? p.length : 8), 0),
      }),
  );
  get load(): WriteLoad {
    return totalLoad(this.lanes.map((lane) => lane.load));
  }

  /** Attempt starts not sent yet, by step: the step's next row supersedes them. */
  private readonly unsentStarts = new Map<string, PendingWrite>();

  constructor(
    readonly client: Sql,
    private readonly retries: BatchRetries,
    /** Told of each admitted run's execution, for other processes' live lists. */
    readonly watchers: ListWatchers,
  ) {}

  /**
   * Environment `environment`'s runs: nothing prepared or started, the id bound to the shared statements.
   * `executions` is the same environment's (an admission that lost its request key reads the holder there).
   */
  environment(
    environment: number,
    executions: Pick<ExecutionStore, "findByRequest">,
    lists: { db: SharedDatabase; tables: SharedTables },
  ): RunStore {
    return new PgRunStore(this, environment, executions, lists);
  }

  /** Due runs of `environment` (single mode's worker). */
  async claim(
    environment: number,
    owner: string,
    now: number,
    leaseUntil: number,
    limit: number,
  ): Promise<ClaimedRun[]> {
    const rows = await this.client.unsafe(CLAIM, [now, owner, leaseUntil, limit, environment], PREPARED);
    return rows.map(parseClaimed);
  }

  /** Due runs of every environment but `skip`'s (hosting mode's one worker poll for the process). */
  async claimAcross(
    owner: string,
    now: number,
    leaseUntil: number,
    limit: number,
    skip: readonly number[],
  ): Promise<ClaimedRun[]> {
    const rows = await this.client.unsafe(CLAIM_ACROSS, [now, owner, leaseUntil, limit, skip.join(",")], PREPARED);
    return rows.map(parseClaimed);
  }

  async renew(owner: string, ids: string[], leaseUntil: number) {
    if (ids.length === 0) return [];
    const rows = await this.client.unsafe(RENEW, [ids.join(","), owner, leaseUntil], PREPARED);
    return rows.map((r) => ({ id: r.id as string, cancelRequested: r.cancelRequested as boolean }));
  }

  async release(owner: string): Promise<void> {
    await this.drain();
    await this.client.unsafe(RELEASE, [owner]);
  }

  /** Waits for queued writes (the store calls this before closing). */
  async drain(): Promise<void> {
    await Promise.all(this.lanes.map((lane) => lane.drain()));
  }

  /** A step's next row makes its attempt's start, if not sent yet, moot; answers the step's key. */
  supersedeUnsentStart(step: StepRow): string {
    const key = `${step.runId}\u0000${step.name}`;
    const unsent = this.unsentStarts.get(key);
    if (unsent) {
      unsent.superseded = true;
      this.unsentStarts.delete(key);
    }
    return key;
  }

  write(
    runId: string,
    sql: string,
    params: Params,
    { startOf, requestKey }: Pick<PendingWrite, "startOf" | "requestKey"> = {},
  ): Promise<Row[]> {
    const lane = this.lanes[laneOf(runId)] as Lane<PendingWrite>;
    return new Promise((resolve, reject) => {
      const item: PendingWrite = { runId, requestKey, sql, params, resolve, reject, startOf };
      if (startOf) this.unsentStarts.set(startOf, item);
      lane.push(item);
    });
  }

  /**
   * One transaction sent as one pipeline (begin, the statements, commit: one write, one round trip), its
   * statements in lock order (lock-order.ts); if any statement fails, the transaction rolls back and each
   * statement runs again alone, so only its own caller fails.
   */
  private async writeBatch(queued: PendingWrite[]): Promise<void> {
    const batch: PendingWrite[] = [];
    for (const item of queued) {
      if (item.superseded) {
        item.resolve([]);
        continue;
      }
      if (item.startOf && this.unsentStarts.get(item.startOf) === item) this.unsentStarts.delete(item.startOf);
      batch.push(item);
    }
    if (batch.length === 0) return;
    batch.sort(inLockOrder);
    const outcome = await pipelined(this.client, (connection) => [
      connection.unsafe("begin"),
      ...batch.map((item) => connection.unsafe(item.sql, item.params, PREPARED)),
      connection.unsafe("commit"),
    ]);
    if ("results" in outcome) {
      batch.forEach((item, i) => {
        item.resolve([...(outcome.results[i + 1] ?? [])]);
      });
      return;
    }
    this.retries.retried("runs", outcome.failure, batch.length);
    await Promise.all(
      batch.map((item) =>
        this.client
          .unsafe(item.sql, item.params, PREPARED)
          .then((rows) => item.resolve([...rows]))
          .catch(item.reject),
      ),
    );
  }
}

/** One environment's runs: PgRuns' statements and lanes with this environment's id bound. */
class PgRunStore extends DrizzleRunReads implements RunStore {
  constructor(
    private readonly runs: PgRuns,
    environment: number,
    private readonly executions: Pick<ExecutionStore, "findByRequest">,
    lists: { db: SharedDatabase; tables: SharedTables },
  ) {
    super(lists, environment);
  }

  async admit(execution: ExecutionRow, run: RunRow) {
    const rows = await this.runs.write(
      run.id,
      ADMIT,
      [
        execution.id,
        execution.requestId,
        execution.principalKind,
        execution.principalId,
        execution.action,
        execution.releaseVersion,
        execution.contractHash,
        execution.inputFingerprint,
        JSON.stringify(execution.input),
        execution.status,
        execution.createdAt,
        execution.startedAt,
        run.status,
        run.leaseOwner,
        run.leaseExpiresAt,
        run.wakeAt,
        run.principalClaims === null ? null : JSON.stringify(run.principalClaims),
        execution.scheduledBy,
        this.environment,
      ],
      { requestKey: requestKey(this.environment, execution) },
    );
    if (rows.length > 0) {
      this.runs.watchers.created([execution.id]);
      return { execution, created: true };
    }
    const existing = await this.executions.findByRequest(
      { kind: execution.principalKind, id: execution.principalId },
      execution.requestId,
    );
    if (!existing) throw new Error(`execution for request ${execution.requestId} vanished after a conflicting insert`);
    return { execution: existing, created: false };
  }

  async get(id: string): Promise<RunRow | null> {
    const [raw] = await this.runs.client.unsafe(
      `select ${RUN_COLUMNS} from workflow_runs where id = $1 and environment = $2`,
      [id, this.environment],
      PREPARED,
    );
    return raw ? parseRun(raw) : null;
  }

  async steps(runId: string): Promise<StepRow[]> {
    const rows = await this.runs.client.unsafe(
      `select ${STEP_COLUMNS} from workflow_steps where run_id = $1 and environment = $2 order by seq`,
      [runId, this.environment],
      PREPARED,
    );
    return rows.map(parseStep);
  }

  claim(owner: string, now: number, leaseUntil: number, limit: number): Promise<ClaimedRun[]> {
    return this.runs.claim(this.environment, owner, now, leaseUntil, limit);
  }

  claimAcross(owner: string, now: number, leaseUntil: number, limit: number, skip: readonly number[] = []) {
    return this.runs.claimAcross(owner, now, leaseUntil, limit, skip);
  }

  renew(owner: string, ids: string[], leaseUntil: number) {
    return this.runs.renew(owner, ids, leaseUntil);
  }

  async saveStep(owner: string, step: StepRow, writes: DataWrite[] = []): Promise<StepSaved> {
    const key = this.runs.supersedeUnsentStart(step);
    const params = [...stepValues(step), owner, this.environment] as Params;
    if (writes.length === 0) {
      const startOf = step.status === "running" ? key : undefined;
      return fenced(await this.runs.write(step.runId, UPSERT_STEP, params, { startOf }));
    }
    try {
      await this.runs.client.begin(async (tx) => {
        // The checkpoint first: it locks the run, and a worker that lost it sends none of its writes.
        const saved = await tx.unsafe(UPSERT_STEP, params, PREPARED);
        if (saved.length === 0) throw new LeaseLost();
        await applyDataWrites(tx, this.environment, writes);
      });
      return SAVED;
    } catch (error) {
      if (error instanceof LeaseLost) return LEASE_LOST;
      return refusal(error);
    }
  }

  async suspend(owner: string, runId: string, { status, wakeAt, step, now }: Suspension): Promise<Fenced> {
    this.runs.supersedeUnsentStart(step);
    const params = [runId, owner, status, wakeAt, now, ...stepValues(step), this.environment] as Params;
    return fenced(await this.runs.write(runId, SUSPEND, params));
  }

  async finish(owner: string, runId: string, s: RunSettlement): Promise<Fenced> {
    return fenced(await this.runs.write(runId, FINISH, finishParams(this.environment, runId, s, owner)));
  }

  async requestCancel(runId: string, now: number): Promise<RunRow | null> {
    await this.runs.client.begin(async (tx) => {
      await tx.unsafe(
        `update workflow_runs set cancel_requested = true, updated_at = $2
         where id = $1 and environment = $3 and ${RUN_WAITING}`,
        [runId, now, this.environment],
      );
      // Unheld (queued, sleeping, backing off, or its worker died): nobody is there to stop it, so end it here.
      await tx.unsafe(FINISH, finishParams(this.environment, runId, runCanceled(now), null), PREPARED);
    });
    return this.get(runId);
  }

  release(owner: string): Promise<void> {
    return this.runs.release(owner);
  }
}

class LeaseLost extends Error {}

/**
 * Admissions first, by request key (each inserts one, and locks no run another transaction can see),
 * then the other writes by run id. The sort is stable, so a run's writes keep their order.
 */
function inLockOrder(a: PendingWrite, b: PendingWrite): number {
  if (a.requestKey !== undefined && b.requestKey !== undefined) return byText(a.requestKey, b.requestKey);
  if (a.requestKey !== undefined) return -1;
  if (b.requestKey !== undefined) return 1;
  return byText(a.runId, b.runId);
}

/** Run ids are UUIDv7: their last hex digit is random. */
const laneOf = (runId: string) => Number.parseInt(runId.slice(-1), 16) % LANES;

const fenced = (rows: Row[]): Fenced => (rows.length > 0 ? SAVED : LEASE_LOST);

function stepValues(step: StepRow): Params {
  return [
    step.runId,
    step.name,
    step.seq,
    step.kind,
    step.status,
    step.attempts,
    step.output === undefined ? null : JSON.stringify(step.output),
    step.error,
    step.startedAt,
    step.finishedAt,
  ] as Params;
}

function finishParams(environment: number, runId: string, s: RunSettlement, owner: string | null): Params {
  const output = s.output === null || s.output === undefined ? null : JSON.stringify(s.output);
  return [runId, s.status, output, s.errorCode, s.errorMessage, s.finishedAt, owner, environment] as Params;
}

/** postgres-js answers bigint columns as text; rows use epoch-millisecond numbers. */
const millis = (value: unknown) => (value === null || value === undefined ? null : Number(value));

function parseRun(raw: Row): RunRow {
  return {
    ...(raw as RunRow),
    leaseExpiresAt: millis(raw.leaseExpiresAt),
    wakeAt: Number(raw.wakeAt),
    createdAt: Number(raw.createdAt),
    updatedAt: Number(raw.updatedAt),
    finishedAt: millis(raw.finishedAt),
  };
}

/** A claimed run; `takenFrom` only when the claim took it over from another owner's expired lease. */
function parseClaimed({ takenFrom, ...raw }: Row): ClaimedRun {
  return { ...parseRun(raw), environment: raw.environment as number, ...(takenFrom ? { takenFrom } : {}) };
}

function parseStep(raw: Row): StepRow {
  return { ...(raw as StepRow), startedAt: millis(raw.startedAt), finishedAt: millis(raw.finishedAt) };
}
