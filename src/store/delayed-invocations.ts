import type { InEnvironment, ScheduledRow } from "./rows.ts";
import type { PrincipalKind, ScheduledStatus } from "./statuses.ts";

export interface DelayedInvocationFilter {
  /** Omitted for a service key, which sees every one. */
  principal?: { kind: PrincipalKind; id: string };
  status?: ScheduledStatus;
  /** Keyset: only ids strictly below this one (UUIDv7: newest first). */
  beforeId?: string;
  limit: number;
}

/**
 * Delayed invocations, the same on every dialect (test/store/delayed-invocation-store.contract.ts). They are
 * inserted by the scheduling execution's writes (`DataWrite` op `schedule`); `insert` is for loading
 * many at once (the drain benchmark). A due one is held by one instance at a time (a lease) while it is
 * started, and every write about it while held is fenced by that lease.
 *
 * Bound to its store's environment (`Store.environment(id)`), but for `markStarted`, which is by owner
 * across environments, and the `…Across` methods: single mode's loop claims its environment's due
 * invocations, hosting mode's one loop for the process those of every environment (hosting-runtime.md).
 */
export interface DelayedInvocationStore {
  insert(rows: ScheduledRow[]): Promise<void>;
  get(id: string): Promise<ScheduledRow | null>;
  /** Newest first. */
  list(filter: DelayedInvocationFilter): Promise<ScheduledRow[]>;
  /**
   * Takes up to `limit` pending invocations of this environment due by `now` that no live lease holds,
   * oldest due first.
   */
  claimDue(owner: string, now: number, leaseUntil: number, limit: number): Promise<InEnvironment<ScheduledRow>[]>;
  /** `claimDue` over every environment but those in `skip` (the same in every view): hosting mode's one claim. */
  claimDueAcross(
    owner: string,
    now: number,
    leaseUntil: number,
    limit: number,
    skip?: readonly number[],
  ): Promise<InEnvironment<ScheduledRow>[]>;
  /** Marks held invocations (of any environment) started with their executions; answers the ids `owner` still held. */
  markStarted(owner: string, started: { id: string; executionId: string }[], now: number): Promise<string[]>;
  /**
   * Cancels a pending invocation (of `principal`, when given) that no live lease holds; answers whether
   * it did.
   */
  cancel(id: string, principal: { kind: PrincipalKind; id: string } | null, now: number): Promise<boolean>;
  /** When the next pending invocation of this environment is due, if any. */
  nextDueAt(): Promise<number | null>;
  /** When the next pending invocation of any environment but those in `skip` is due, if any. */
  nextDueAtAcross(skip?: readonly number[]): Promise<number | null>;
}
