import type { ScheduleTickRow } from "./rows.ts";

/**
 * Where each schedule stands, the same on every dialect (test/store/schedule-store.contract.ts). One
 * instance at a time holds a schedule's claim (a lease, like a workflow run's); its writes are fenced by it.
 * Bound to its store's environment: a schedule is known by (environment, name), so the same name in two
 * environments is two schedules.
 */
export interface ScheduleStore {
  /**
   * Takes the schedule's claim until `leaseUntil` unless another instance holds it; answers the last tick
   * handled, or null when another holds it. A schedule never seen before starts at `now` (its first tick
   * is the next one).
   */
  claim(name: string, owner: string, now: number, leaseUntil: number): Promise<number | null>;
  /** Records `tickAt` as handled, if `owner` still holds the claim; false when it lost it. */
  advance(name: string, owner: string, tickAt: number): Promise<boolean>;
  /** Lets go of the claim (any instance may take it at once). */
  release(name: string, owner: string): Promise<void>;
  list(): Promise<ScheduleTickRow[]>;
  /** Stores when this environment's next tick is due (null: its release has no schedules). */
  setNextTick(at: number | null): Promise<void>;
  /**
   * Service-wide (the same in every view): takes up to `limit` environments but `skip`'s whose next tick
   * is due by `now`, moving it to `leaseUntil` (the instance that took one stores the real next tick
   * after its pass; if it dies, the environment is due again then). Answers their ids.
   */
  claimDueEnvironments(now: number, leaseUntil: number, limit: number, skip?: readonly number[]): Promise<number[]>;
  /** Service-wide: when the next tick of any environment but `skip`'s is due, if any. */
  nextTickAt(skip?: readonly number[]): Promise<number | null>;
}
