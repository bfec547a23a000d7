import { hostname } from "node:os";

/**
 * The server processes sharing one database. On PostgreSQL several may: each says it is alive with a
 * heartbeat, and fails the function executions a dead one left `running`. A SQLite database has one
 * process, which does that once at start-up (`recover`).
 */
export interface InstanceStore {
  /** This server process as the others know it: the owner of its leases, the instance of its executions. */
  readonly id: string;
  /**
   * At start-up: fails the function executions a dead process left `running` and frees the runs it held;
   * answers how many executions failed. Only where one process serves the database (SQLite) can it know
   * that; on PostgreSQL run leases expire by themselves and this answers 0.
   */
  recover(now: number): Promise<number>;
  /**
   * Says this process is alive until `expiresAt`, and fails the function executions that instances no
   * longer alive left `running` (`execution_interrupted`); answers how many. Does nothing on SQLite.
   */
  keepAlive(now: number, expiresAt: number): Promise<number>;
  /** Says this process is gone (on shutdown): whatever it still runs is interrupted for the others. */
  retire(): Promise<void>;
}

/** A new name for this process: host and pid make it readable in rows, the random part unique. */
export const newInstanceId = () => `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`;
