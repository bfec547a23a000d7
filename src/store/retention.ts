/** Forgetting old executions (EXECUTION_RETENTION), the same on every dialect (test/store/retention-store.contract.ts). */
export interface RetentionStore {
  /**
   * Deletes up to `limit` executions of this view's environment that ended before `finishedBefore`
   * (oldest first), with their log lines, their uploads' file records and, for a workflow, its run and steps; answers how many. An
   * execution that has not ended, or whose run has not, is never deleted. Safe to repeat and to run on
   * several instances at once: each statement deletes what is still there. `dropUploads` gets the
   * paths of the batch's uploads before any record goes; when it throws, the batch is left whole.
   */
  pruneFinished(
    finishedBefore: number,
    limit: number,
    dropUploads: (paths: string[]) => Promise<void>,
  ): Promise<number>;
  /**
   * `pruneFinished` over every environment (hosting mode's one sweep for the process; the same in every
   * view): `dropUploads` is handed each environment's paths with its id, to drop from its own storage.
   */
  pruneFinishedAcross(
    finishedBefore: number,
    limit: number,
    dropUploads: (environment: number, paths: string[]) => Promise<void>,
  ): Promise<number>;
}
