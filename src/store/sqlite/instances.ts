import { INTERRUPTED } from "../executions.ts";
import { type InstanceRecord, type InstanceStore, newInstanceId, SERVER_VERSION } from "../instances.ts";
import type { SqliteExecutionWriter } from "./executions.ts";
import type { SqliteRuns } from "./runs.ts";

/** One process serves a SQLite database: whatever was left running when it starts was left by a dead one. */
export class SqliteInstanceStore implements InstanceStore {
  readonly id = newInstanceId();
  private readonly startedAt = Date.now();

  constructor(
    private readonly executions: SqliteExecutionWriter,
    private readonly runs: SqliteRuns,
  ) {}

  async recover(now: number): Promise<number> {
    this.runs.releaseAllLeases();
    return this.executions.failRunning(now, INTERRUPTED);
  }

  async keepAlive(_now: number, _expiresAt: number): Promise<string[]> {
    return [];
  }

  /** No heartbeat is written (no other process could read it): this process, alive as long as it answers. */
  async live(now: number): Promise<InstanceRecord[]> {
    return [{ id: this.id, startedAt: this.startedAt, beatAt: now, expiresAt: null, version: SERVER_VERSION }];
  }

  async retire(): Promise<void> {}
}
