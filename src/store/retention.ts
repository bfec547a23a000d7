/** Forgetting old executions (EXECUTION_RETENTION), the same on every dialect (test/store/retention-store.contract.ts). */
export interface RetentionStore {
  /**
   * Deletes up to `limit` executions of any environment that ended before `finishedBefore` (oldest first,
   * one sweep for the whole service), with their log
   * lines, their uploads' file records and, for a workflow, its run and steps; answers how many. An
   * execution that has not ended, or whose run has not, is never deleted. Safe to repeat and to run on
   * several instances at once: each statement deletes what is still there. `dropUploads` gets the
   * paths of the batch's uploads before any record goes; when it throws, the batch is left whole.
   */
  pruneFinished(
    finishedBefore: number,
    limit: number,
    dropUploads: (paths: string[]) => Promise<void>,
  ): Promise<number>;
}
