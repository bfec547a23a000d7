import { hostname } from "node:os";
import packageJson from "../../package.json" with { type: "json" };

/** A server process sharing the database, as `GET /instances` lists it. Times are epoch milliseconds. */
export interface InstanceRecord {
  id: string;
  startedAt: number;
  /** Its last heartbeat (null: a server older than the column wrote the row). */
  beatAt: number | null;
  /** Taken for dead, and its executions failed, once this passes without a heartbeat (null: SQLite's one process). */
  expiresAt: number | null;
  /** Its server version, when it said. */
  version: string | null;
}

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
   * longer alive left `running` (`execution_interrupted`); answers their ids. Does nothing on SQLite.
   */
  keepAlive(now: number, expiresAt: number): Promise<string[]>;
  /** The instances alive at `now`, oldest first (SQLite: this process, the only one). */
  live(now: number): Promise<InstanceRecord[]>;
  /** Says this process is gone (on shutdown): whatever it still runs is interrupted for the others. */
  retire(): Promise<void>;
}

/** A new name for this process: host and pid make it readable in rows, the random part unique. */
export const newInstanceId = () => `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`;

/** The server version each instance writes with its heartbeat. */
export const SERVER_VERSION: string = packageJson.version;
