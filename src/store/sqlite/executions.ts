import type { Database, Statement } from "bun:sqlite";
import type { DataWrite } from "../data.ts";
import { selectList } from "../drizzle/columns.ts";
import type { SharedDatabase, SharedTables } from "../drizzle/database.ts";
import { listExecutions } from "../drizzle/lists.ts";
import type { ExecutionChanges, ExecutionFilter, ExecutionSettlement, ExecutionStore } from "../executions.ts";
import { type ExecutionRow, type LogRow, STORED_SIZES } from "../rows.ts";
import { executions } from "../schema/sqlite.ts";
import type { PrincipalKind } from "../statuses.ts";
import { failedWrites, writeFailure } from "../write-failure.ts";
import type { BackgroundCheckpoints } from "./checkpoints/index.ts";
import type { SqliteDataWriter } from "./data-writes.ts";
import { type HashedKey, hashedKey, SqliteRequestIndex } from "./request-keys/index.ts";

type RawRow = Omit<ExecutionRow, "input" | "output"> & { input: string; output: string | null };

interface Waiter {
  /** Told what was stored: the settlement asked for, or a failure when its writes could not commit. */
  done: (stored: ExecutionSettlement) => void;
  fail: (error: unknown) => void;
}

interface PendingInsert {
  environment: number;
  row: ExecutionRow;
  /** Data writes merged in with the settlement; they commit with the row or not at all. */
  writes: DataWrite[];
  /** Log lines that came with the settlement. */
  logs: LogRow[];
  waiters: Waiter[];
  /** The row's rowid in `executions` once inserted (the request-key index reads its key by it). */
  rowid: number;
  /** Its (principal, requestId), hashed once for the claim's lookup, the queue's map and the index. */
  key: HashedKey;
}

interface PendingLines {
  environment: number;
  lines: LogRow[];
  done: () => void;
  fail: (error: unknown) => void;
}

interface PendingUpdate extends Waiter {
  environment: number;
  id: string;
  settlement: ExecutionSettlement;
}

const COLUMNS = selectList(executions, undefined, ["environment", "instance", ...STORED_SIZES]);

/**
 * Executions on SQLite, with group commit for the writes every invocation makes, one per process for every
 * environment (each write names its own; `SqliteExecutionStore` is an environment's view). Writes queued during one turn of the event loop
 * commit together in one transaction, and an execution that ends before its row was flushed is
 * written once, already settled, instead of inserted and then updated. Claims are decided here
 * (queued rows first, then the table), so within this process a (principal, requestId) is claimed
 * once; one SQLite database is served by one server process (PostgreSQL is the multi-instance store).
 * Statements are prepared once: drizzle building SQL per call cost more than the writes (BENCHMARKS.md).
 */
export class SqliteExecutionWriter {
  private inserts = new Map<string, PendingInsert>();
  private byRequestKey = new Map<string, PendingInsert>();
  private updates: PendingUpdate[] = [];
  private logLines: PendingLines[] = [];
  private scheduled = false;
  private readonly insert: Statement;
  private readonly byId: Statement<RawRow>;
  private readonly update: Statement;
  private readonly insertLine: Statement;
  private readonly requests: SqliteRequestIndex;

  constructor(
    private readonly client: Database,
    private readonly data: SqliteDataWriter,
    /** The request-key index's file (request-keys/file.ts). */
    requestKeysFile: string,
    /** WAL checkpoints off the serving thread; none for a database in memory. */
    private readonly checkpoints: BackgroundCheckpoints | null = null,
  ) {
    // The sizes stored beside the values are measured from the statements' own parameters: SQLite knows a
    // bound text's length in bytes, so they cost the group commit nothing.
    this.insert = client.prepare(
      `insert into executions (environment, id, request_id, principal_kind, principal_id, action, kind, release_version, contract_hash,
        input_fingerprint, input, status, output, error_code, error_message, created_at, started_at, finished_at,
        scheduled_by, input_bytes, output_bytes)
       values ($environment, $id, $requestId, $principalKind, $principalId, $action, $kind, $releaseVersion, $contractHash,
        $inputFingerprint, $input, $status, $output, $errorCode, $errorMessage, $createdAt, $startedAt, $finishedAt,
        $scheduledBy, octet_length($input), octet_length($output))`,
    );
    this.requests = new SqliteRequestIndex(client, requestKeysFile, () => this.inserts.values().next().value?.row.id);
    this.byId = client.prepare(`select ${COLUMNS} from executions where id = $id and environment = $environment`);
    this.update = client.prepare(
      `update executions set status = $status, output = $output, output_bytes = octet_length($output),
        error_code = $errorCode, error_message = $errorMessage, finished_at = $finishedAt
       where id = $id and environment = $environment`,
    );
    this.insertLine = client.prepare(
      `insert into execution_logs (environment, execution_id, seq, at, level, step, line)
       values ($environment, $executionId, $seq, $at, $level, $step, $line) on conflict do nothing`,
    );
  }

  /** Claims (principal, requestId): the queued or stored row holding it, or this one, queued for the next commit. */
  async claim(environment: number, row: ExecutionRow): Promise<{ row: ExecutionRow; created: boolean }> {
    const key = hashedKey(environment, row.principalKind, row.principalId, row.requestId);
    const existing = this.findQueuedOrStored(environment, row.principalKind, row.principalId, row.requestId, key);
    if (existing) return { row: existing, created: false };
    const pending: PendingInsert = { environment, row: { ...row }, writes: [], logs: [], waiters: [], rowid: 0, key };
    this.inserts.set(row.id, pending);
    this.byRequestKey.set(key.text, pending);
    this.schedule();
    return { row, created: true };
  }

  /** The claim, answered at once (memory decides it); `committed` resolves when its group commit has. */
  async claimToRun(environment: number, row: ExecutionRow) {
    const claim = await this.claim(environment, row);
    return { ...claim, committed: claim.created ? this.whenCommitted(row.id) : Promise.resolve() };
  }

  /** Resolves once the queued insert of `id` has committed (at once when none is queued); rejects if it failed. */
  private whenCommitted(id: string): Promise<void> {
    const pending = this.inserts.get(id);
    if (!pending) return Promise.resolve();
    const committed = new Promise<void>((done, fail) => pending.waiters.push({ done: () => done(), fail }));
    // Awaited only when an answer goes out before the end; a failed insert is reported by its settlement.
    committed.catch(() => {});
    return committed;
  }

  /**
   * Inserts a row at once, outside the group commit, inside the caller's transaction (a workflow's
   * admission); call `admitted` with the rowid it returns once that transaction has committed.
   */
  insertNow(environment: number, row: ExecutionRow): number {
    const inserted = this.insert.run({ ...row, environment, input: JSON.stringify(row.input), output: null });
    return Number(inserted.lastInsertRowid);
  }

  /** Where a failed merge of request keys, or a failed background checkpoint, is told (store.ts `onTrouble`). */
  onTrouble(warn: (message: string) => void): void {
    this.requests.warn = warn;
    if (this.checkpoints) this.checkpoints.warn = warn;
  }

  /** Deletes the request keys of executions being deleted (retention), each in its environment. */
  forgetRequests(
    keys: { environment: number; principalKind: string; principalId: string; requestId: string }[],
  ): Promise<void> {
    return this.requests.forget(keys);
  }

  /** Records the request key of a row `insertNow` wrote, now committed. */
  admitted(environment: number, row: ExecutionRow, rowid: number): void {
    this.requests.committed(environment, row, rowid);
  }

  /** Resolves once the final status is committed (merged into the insert when that is still queued). */
  settle(environment: number, id: string, settlement: ExecutionSettlement): Promise<ExecutionSettlement> {
    return new Promise((done, fail) => {
      const pending = this.inserts.get(id);
      if (pending?.environment === environment) {
        const { writes = [], logs = [], ...final } = settlement;
        Object.assign(pending.row, final);
        pending.writes = writes;
        pending.logs = logs;
        pending.waiters.push({ done, fail });
      } else {
        this.updates.push({ environment, id, settlement, done, fail });
      }
      this.schedule();
    });
  }

  /** Log lines of running executions: committed in the next group commit, with the executions' own writes. */
  appendLogs(environment: number, lines: LogRow[]): Promise<void> {
    if (lines.length === 0) return Promise.resolve();
    return new Promise((done, fail) => {
      this.logLines.push({ environment, lines, done, fail });
      this.schedule();
    });
  }

  get(environment: number, id: string): ExecutionRow | null {
    const pending = this.inserts.get(id);
    if (pending) return pending.environment === environment ? { ...pending.row } : null;
    const raw = this.byId.get({ id, environment });
    return raw ? parseRow(raw) : null;
  }

  findQueuedOrStored(
    environment: number,
    kind: string,
    id: string,
    requestId: string,
    key = hashedKey(environment, kind, id, requestId),
  ): ExecutionRow | null {
    const pending = this.byRequestKey.get(key.text);
    if (pending) return { ...pending.row };
    const holder = this.requests.lookup(environment, kind, id, requestId, key);
    const raw = holder === null ? null : this.byId.get({ id: holder, environment });
    return raw ? parseRow(raw) : null;
  }

  /**
   * Fails every stored `running` function execution (none can be running: this process has not started
   * any yet). A workflow's execution follows its run, which resumes instead.
   */
  failRunning(at: number, message: string): number {
    this.flush();
    return this.client
      .prepare(
        `update executions set status = 'failed', error_code = 'execution_interrupted', error_message = $message,
          finished_at = $at where status = 'running' and kind = 'function'`,
      )
      .run({ at, message }).changes;
  }

  private schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      if (this.scheduled) this.flush();
    });
  }

  /** Writes waiting for the next group commit. */
  get queued(): number {
    return this.inserts.size + this.updates.length + this.logLines.length;
  }

  /** Commits everything queued now. */
  flush() {
    this.scheduled = false;
    // Nothing to commit: no empty transaction, and the checkpoint thread is not started for nothing.
    if (this.inserts.size === 0 && this.updates.length === 0 && this.logLines.length === 0) return;
    const inserts = [...this.inserts.values()];
    const updates = this.updates;
    const logLines = this.logLines;
    this.inserts = new Map();
    this.byRequestKey = new Map();
    this.updates = [];
    this.logLines = [];
    const results: ExecutionSettlement[] = [];
    try {
      this.client.transaction(() => {
        for (const pending of inserts) results.push(this.writeInsert(pending));
        for (const update of updates) results.push(this.writeUpdate(update));
        for (const pending of logLines) this.writeLines(pending.environment, pending.lines);
      })();
    } catch {
      // One bad write must not fail its neighbours: write the batch again, one transaction each.
      for (const pending of inserts) {
        if (this.alone(() => this.writeInsert(pending), pending.waiters)) {
          this.requests.committed(pending.environment, pending.row, pending.rowid, pending.key);
        }
      }
      for (const update of updates) this.alone(() => this.writeUpdate(update), [update]);
      for (const pending of logLines) this.linesAlone(pending);
      this.checkpoints?.committed();
      return;
    }
    this.checkpoints?.committed();
    for (const pending of logLines) pending.done();
    inserts.forEach((pending, i) => {
      this.requests.committed(pending.environment, pending.row, pending.rowid, pending.key);
      for (const waiter of pending.waiters) waiter.done(results[i] as ExecutionSettlement);
    });
    updates.forEach((update, i) => {
      update.done(results[inserts.length + i] as ExecutionSettlement);
    });
  }

  /** Whether the write committed. */
  private alone(write: () => ExecutionSettlement, waiters: Waiter[]): boolean {
    let stored: ExecutionSettlement;
    try {
      stored = this.client.transaction(write)();
    } catch (error) {
      for (const waiter of waiters) waiter.fail(error);
      return false;
    }
    for (const waiter of waiters) waiter.done(stored);
    return true;
  }

  /** Commits what is queued and merges every request key (the store calls this before closing). */
  async close(): Promise<void> {
    this.flush();
    await Promise.all([this.requests.close(), this.checkpoints?.close()]);
  }

  private linesAlone(pending: PendingLines) {
    try {
      this.client.transaction(() => this.writeLines(pending.environment, pending.lines))();
    } catch (error) {
      pending.fail(error);
      return;
    }
    pending.done();
  }

  private writeLines(environment: number, lines: LogRow[]) {
    for (const line of lines) this.insertLine.run({ ...line, environment });
  }

  private writeInsert(pending: PendingInsert): ExecutionSettlement {
    // Writes come only with a settlement; a row without them may still be running (finishedAt stays null).
    const row =
      pending.writes.length === 0
        ? pending.row
        : { ...pending.row, ...this.applyWrites(pending.environment, pending.writes, settlementOf(pending.row)) };
    const { lastInsertRowid } = this.insert.run({
      ...row,
      environment: pending.environment,
      input: JSON.stringify(row.input),
      output: row.output === null ? null : JSON.stringify(row.output),
    });
    pending.rowid = Number(lastInsertRowid);
    this.writeLines(pending.environment, pending.logs);
    return settlementOf(row);
  }

  private writeUpdate({ environment, id, settlement }: PendingUpdate): ExecutionSettlement {
    const { writes = [], logs = [], ...requested } = settlement;
    const s = this.applyWrites(environment, writes, requested);
    const { changes } = this.update.run({
      environment,
      id,
      status: s.status,
      output: s.output === null ? null : JSON.stringify(s.output),
      errorCode: s.errorCode,
      errorMessage: s.errorMessage,
      finishedAt: s.finishedAt,
    });
    if (changes === 0) throw new Error(`execution ${id} is not stored`);
    this.writeLines(environment, logs);
    return s;
  }

  /** Runs an execution's data writes inside a savepoint: all of them, or none and a failed settlement. */
  private applyWrites(environment: number, writes: DataWrite[], settlement: ExecutionSettlement): ExecutionSettlement {
    if (writes.length === 0) return settlement;
    this.client.run("savepoint execution_writes");
    try {
      this.data.apply(environment, writes);
      this.client.run("release execution_writes");
      return settlement;
    } catch (error) {
      this.client.run("rollback to execution_writes");
      this.client.run("release execution_writes");
      const reason = writeFailure(error);
      if (reason === null) throw error;
      return failedWrites(settlement, reason);
    }
  }
}

const settlementOf = (row: ExecutionRow): ExecutionSettlement => ({
  status: row.status as ExecutionSettlement["status"],
  output: row.output,
  errorCode: row.errorCode,
  errorMessage: row.errorMessage,
  finishedAt: row.finishedAt ?? 0,
});

function parseRow(raw: RawRow): ExecutionRow {
  return { ...raw, input: JSON.parse(raw.input), output: raw.output === null ? null : JSON.parse(raw.output) };
}

/**
 * An environment's executions: the process's writer, its environment bound to every call, so another
 * environment's ids and request keys are unknown here. Cheap to make (no statement, no timer).
 */
export class SqliteExecutionStore implements ExecutionStore {
  constructor(
    private readonly writer: SqliteExecutionWriter,
    private readonly environment: number,
    private readonly lists: { db: SharedDatabase; tables: SharedTables },
  ) {}

  claim(row: ExecutionRow) {
    return this.writer.claim(this.environment, row);
  }

  claimToRun(row: ExecutionRow) {
    return this.writer.claimToRun(this.environment, row);
  }

  async get(id: string): Promise<ExecutionRow | null> {
    return this.writer.get(this.environment, id);
  }

  /** One read each: a SQLite read by id is a call into the library, not a round trip. */
  async getMany(ids: string[]): Promise<ExecutionRow[]> {
    return ids.flatMap((id) => this.writer.get(this.environment, id) ?? []);
  }

  async findByRequest(principal: { kind: PrincipalKind; id: string }, requestId: string) {
    return this.writer.findQueuedOrStored(this.environment, principal.kind, principal.id, requestId);
  }

  list(filter: ExecutionFilter) {
    return listExecutions(this.lists.db, this.lists.tables.executions, this.environment, filter);
  }

  settle(id: string, settlement: ExecutionSettlement) {
    return this.writer.settle(this.environment, id, settlement);
  }

  /** One process serves a SQLite database: there is nobody else to hear from. */
  async listen(_changes: ExecutionChanges): Promise<void> {}

  async followLogs(_id: string, _following: boolean): Promise<void> {}

  watchLists(_watching: boolean): void {}
}
