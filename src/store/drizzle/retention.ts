import { and, asc, eq, inArray, isNotNull, lt, notExists, notInArray, type SQL, sql } from "drizzle-orm";
import type { RetentionStore } from "../retention.ts";
import { EXECUTION_STATUSES, isRunTerminal, isTerminal, RUN_STATUSES } from "../statuses.ts";
import type { SharedDatabase, SharedTables } from "./database.ts";

const EXECUTION_ENDED = EXECUTION_STATUSES.filter(isTerminal);
const RUN_ENDED = RUN_STATUSES.filter(isRunTerminal);

type Pruned = Pick<SharedTables, "executions" | "executionLogs" | "files" | "workflowRuns" | "workflowSteps">;

/** An execution's idempotency key in its environment, for a dialect that keeps keys beside the executions (SQLite). */
export type PrunedKey = { environment: number; principalKind: string; principalId: string; requestId: string };

export class DrizzleRetentionStore implements RetentionStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Pruned,
    private readonly environment: number,
    /** Forgets the keys of executions about to be deleted, where they are not in the executions table. */
    private readonly forgetKeys: (keys: PrunedKey[]) => Promise<void> | void = () => {},
  ) {}

  pruneFinished(
    finishedBefore: number,
    limit: number,
    dropUploads: (paths: string[]) => Promise<void>,
  ): Promise<number> {
    return this.prune(eq(this.t.executions.environment, this.environment), finishedBefore, limit, (uploads) =>
      dropUploads(uploads.map((upload) => upload.path)),
    );
  }

  async pruneFinishedAcross(
    finishedBefore: number,
    limit: number,
    dropUploads: (environment: number, paths: string[]) => Promise<void>,
  ): Promise<number> {
    return this.prune(undefined, finishedBefore, limit, async (uploads) => {
      const byEnvironment = Map.groupBy(uploads, (upload) => upload.environment);
      for (const [environment, some] of byEnvironment) {
        await dropUploads(
          environment,
          some.map((upload) => upload.path),
        );
      }
    });
  }

  private async prune(
    scope: SQL | undefined,
    finishedBefore: number,
    limit: number,
    dropUploads: (uploads: { path: string; environment: number }[]) => Promise<void>,
  ): Promise<number> {
    const { executions: e, executionLogs, files, workflowRuns: runs, workflowSteps: steps } = this.t;
    const unfinishedRun = this.db
      .select({ one: sql`1` })
      .from(runs)
      .where(and(sql`${runs.id} = ${e.id}`, notInArray(runs.status, RUN_ENDED)));
    const picked = await this.db
      .select({
        id: e.id,
        environment: e.environment,
        principalKind: e.principalKind,
        principalId: e.principalId,
        requestId: e.requestId,
      })
      .from(e)
      .where(
        and(
          scope,
          isNotNull(e.finishedAt),
          lt(e.finishedAt, finishedBefore),
          inArray(e.status, EXECUTION_ENDED),
          notExists(unfinishedRun),
        ),
      )
      .orderBy(asc(e.finishedAt))
      .limit(limit);
    const ids = picked.map((row) => row.id);
    if (ids.length === 0) return 0;
    const uploads = await this.db
      .select({ path: files.path, environment: files.environment })
      .from(files)
      .where(inArray(files.executionId, ids));
    // The bytes before their records: a prune stopped in between finds the records, and the paths, again.
    if (uploads.length > 0) await dropUploads(uploads);
    // What hangs off an execution goes first: a prune stopped midway leaves the execution to be picked again.
    await this.db.delete(executionLogs).where(inArray(executionLogs.executionId, ids));
    await this.db.delete(files).where(inArray(files.executionId, ids));
    await this.db.delete(steps).where(inArray(steps.runId, ids));
    await this.forgetKeys(picked);
    await this.db.delete(runs).where(and(inArray(runs.id, ids), inArray(runs.status, RUN_ENDED)));
    await this.db.delete(e).where(and(inArray(e.id, ids), inArray(e.status, EXECUTION_ENDED)));
    return ids.length;
  }
}
