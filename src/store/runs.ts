import type { DataWrite } from "./data.ts";
import type { Listed } from "./executions.ts";
import type { ExecutionRow, InEnvironment, RunRow, StepRow } from "./rows.ts";
import { isRunTerminal, type PrincipalKind, RUN_STATUSES, type RunStatus, type StepStatus } from "./statuses.ts";

export interface RunFilter {
  /** Omitted for a service key, which sees every run. */
  principal?: { kind: PrincipalKind; id: string };
  workflow?: string;
  status?: RunStatus;
  /** Keyset: only ids strictly below this one (run ids are UUIDv7: id order is creation order). */
  beforeId?: string;
  limit: number;
  /** Values larger than this (as stored) are left in the database: `null` in the row (see LISTED_VALUES). */
  maxValueBytes: number;
}

export type RunListRow = Listed<RunRow>;

/** The order a bounded read takes a step's values in, as LISTED_VALUES for executions and runs. */
export const BOUNDED_STEP_VALUES = ["output", "error"] as const;

/** A step as bounded reads give it: its values left in the database as BOUNDED_STEP_VALUES says, sized beside. */
export type BoundedStep = StepRow & {
  /** 0 when there is no output. */
  outputBytes: number;
  /** 0 when there is no error. */
  errorBytes: number;
};

/** How a run ended, for the run and the execution that follows it. */
export interface RunSettlement {
  status: "succeeded" | "failed" | "canceled";
  output: unknown;
  errorCode: string | null;
  errorMessage: string | null;
  finishedAt: number;
}

export const runCanceled = (at: number): RunSettlement => ({
  status: "canceled",
  output: null,
  errorCode: "run_canceled",
  errorMessage: "the run was canceled",
  finishedAt: at,
});

/** What a write fenced by a run's lease did: stored, or nothing at all because `owner` no longer holds the run. */
export type Fenced = { saved: true } | { leaseLost: true };

/** A step's checkpoint may also be refused: its data writes broke a rule of the data (a unique value taken, a row gone). */
export type StepSaved = Fenced | { refused: string };

/** A run given up until `wakeAt` (a sleep, a retry's backoff), with the step row that says why. */
export interface Suspension {
  status: "running" | "sleeping";
  wakeAt: number;
  step: StepRow;
  now: number;
}

export const SAVED = { saved: true } as const;
export const LEASE_LOST = { leaseLost: true } as const;

/**
 * A run as a claim answers it. `takenFrom`: the owner whose lease had expired when this claim took the run
 * over (a dead or stalled instance), absent when no one held it (new, woken, released) or on SQLite.
 */
export type ClaimedRun = InEnvironment<RunRow> & { takenFrom?: string | null };

/** A run that has not ended (the due index covers exactly these). */
export type ActiveRunStatus = Exclude<RunStatus, RunSettlement["status"]>;
export const ACTIVE_RUN_STATUSES = RUN_STATUSES.filter((status): status is ActiveRunStatus => !isRunTerminal(status));
/** A step that has not ended: a canceled run's steps in these end canceled with it. */
export const OPEN_STEP_STATUSES: readonly StepStatus[] = ["running", "retrying", "sleeping"];

/**
 * Workflow runs and their checkpoints, the same on every dialect (test/store/run-store.contract.ts).
 *
 * A run is held by the owner its last claim (or admission) named, until the run ends, is suspended or
 * released, or another owner claims it once its lease has expired. Every write a worker makes about a
 * run is fenced by that: once another owner has taken the run over, the old one's writes change nothing
 * and answer `{ leaseLost }`. Fencing is by owner, not by the clock: a lease that ran out while no one
 * claimed the run is still its owner's. Times are the caller's (`now`, `leaseUntil`, a settlement's
 * `finishedAt`); the store never reads a clock.
 *
 * Bound to its store's environment (`Store.environment(id)`): a run of another environment is unknown
 * here, its id answers null and its writes `{ leaseLost }`. `claim` takes this environment's due runs
 * (single mode's worker), `claimAcross` those of every environment (hosting mode's one worker poll for the
 * process: docs/decisions/hosting-runtime.md); `renew` and `release` are by owner, across environments.
 */
export interface RunStore {
  /**
   * Inserts the execution and its run in one transaction unless (principal, requestId) is taken in this
   * environment; then
   * answers the execution holding the key (its run, if it is a workflow's, has the same id).
   */
  admit(execution: ExecutionRow, run: RunRow): Promise<{ execution: ExecutionRow; created: boolean }>;
  get(id: string): Promise<RunRow | null>;
  /** Runs newest first. */
  list(filter: RunFilter): Promise<RunListRow[]>;
  /** How many runs of this environment are queued, running and sleeping now. */
  countActive(): Promise<Record<ActiveRunStatus, number>>;
  /** The same, over every environment (hosting mode's `actuate_workflow_runs_active` gauge is the process's). */
  countActiveAcross(): Promise<Record<ActiveRunStatus, number>>;
  steps(runId: string): Promise<StepRow[]>;
  /** One run with its values bounded as `list` bounds them, or null. */
  getBounded(id: string, maxValueBytes: number): Promise<RunListRow | null>;
  /** The runs of these ids that exist, bounded as `getBounded`, in no set order. */
  getManyBounded(ids: string[], maxValueBytes: number): Promise<RunListRow[]>;
  /** A run's steps in order, their values over `maxValueBytes` (as stored) left in the database (BOUNDED_STEP_VALUES). */
  boundedSteps(runId: string, maxValueBytes: number): Promise<BoundedStep[]>;
  /**
   * Leases up to `limit` runs that are due (or asked to cancel) and whose lease, if any, expired before
   * `now`; the runs become `running` (their executions too, when queued). Concurrent claims never hand
   * one run to two owners. Runs of this environment only, each naming it.
   */
  claim(owner: string, now: number, leaseUntil: number, limit: number): Promise<ClaimedRun[]>;
  /**
   * `claim` over every environment but those in `skip` (the same in every view): hosting mode's one
   * worker poll for a process, which hands each run to its environment's runtime.
   */
  claimAcross(
    owner: string,
    now: number,
    leaseUntil: number,
    limit: number,
    skip?: readonly number[],
  ): Promise<ClaimedRun[]>;
  /**
   * Extends the leases `owner` still holds among `ids` (of any environment: run ids are unique); answers
   * those, with whether a cancel was asked.
   */
  renew(owner: string, ids: string[], leaseUntil: number): Promise<{ id: string; cancelRequested: boolean }[]>;
  /**
   * Stores a step's row; its data writes (a succeeded step's) commit with it or not at all, and a write
   * the data refuses answers `{ refused }` with nothing stored. An attempt's start (`running`) never
   * replaces the row of the same or a later attempt, whatever order writes land in.
   */
  saveStep(owner: string, step: StepRow, writes?: DataWrite[]): Promise<StepSaved>;
  /**
   * Gives the run up until `wakeAt` (a sleep, a retry's backoff) with the step row that says why, in one
   * transaction: the step row, the run's status and wake time, and the lease let go, or none of them.
   */
  suspend(owner: string, runId: string, suspension: Suspension): Promise<Fenced>;
  /** Ends the run and its execution in one transaction (a canceled run's open steps end canceled with it). */
  finish(owner: string, runId: string, settlement: RunSettlement): Promise<Fenced>;
  /**
   * Asks a run to stop. One that no live lease holds at `now` ends `canceled` at once (with its
   * execution); a held one is flagged for its worker. Answers the run as it is afterwards, or null when
   * there is none.
   */
  requestCancel(runId: string, now: number): Promise<RunRow | null>;
  /** Lets go of every run `owner` holds in any environment (on shutdown), so another worker can resume them at once. */
  release(owner: string): Promise<void>;
}
