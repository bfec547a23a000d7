import { INTERRUPTED } from "../executions.ts";
import { type InstanceStore, newInstanceId } from "../instances.ts";
import type { SqliteExecutionWriter } from "./executions.ts";
import type { SqliteRuns } from "./runs.ts";

/** One process serves a SQLite database: whatever was left running when it starts was left by a dead one. */
export class SqliteInstanceStore implements InstanceStore {
  readonly id = newInstanceId();

  constructor(
    private readonly executions: SqliteExecutionWriter,
    private readonly runs: SqliteRuns,
  ) {}

  async recover(now: number): Promise<number> {
    this.runs.releaseAllLeases();
    return this.executions.failRunning(now, INTERRUPTED);
  }

  async keepAlive(_now: number, _expiresAt: number): Promise<number> {
    return 0;
  }

  async retire(): Promise<void> {}
}
