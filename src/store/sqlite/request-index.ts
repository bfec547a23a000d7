import type { Database, Statement } from "bun:sqlite";
import { uuidV7Floor, uuidV7Millis } from "../../lib/ids.ts";
import { KeyFilter } from "./key-filter.ts";

/** One execution's idempotency key and the execution that holds it: [principalKind, principalId, requestId, executionId]. */
type RequestKey = [string, string, string, string];

/** Keys gathered before they are sorted and merged: the more at once, the more of them share an index page. */
const MERGE_AT = 4096;
/** The longest a key waits for its merge when fewer arrive (it is answered from memory meanwhile). */
const MERGE_AFTER_MS = 1000;
/** Keys per merge transaction, one transaction per turn of the event loop, so requests run in between. */
const SLICE = 256;
/**
 * The merged-through mark stays this far behind the oldest key not merged: execution ids are UUIDv7
 * (time first), so a clock stepping back by less than this cannot hide an execution from the restart.
 */
const MARK_MARGIN_MS = 1000;
/** The first key filter's capacity; a full one is built again four times larger. */
const FILTER_CAPACITY = 1 << 16;
/** Keys read per turn of the event loop while a key filter is built from the table. */
const FILTER_SCAN = 8192;

/** A (principal, requestId) as one map key (the queued rows and the recent keys use the same). */
export const keyOf = (kind: string, principal: string, requestId: string) =>
  `${kind}\u0000${principal}\u0000${requestId}`;

/**
 * Which execution holds each (principal, requestId) on SQLite, decided exactly without writing a random
 * key in the group commit: `executions` has no index on request_id, whose random inserts dirtied a page
 * each per commit (BENCHMARKS.md). Keys committed recently are held in memory (one process serves a
 * SQLite database, so memory is the whole truth for them) and merged into execution_requests in sorted
 * batches, a slice per turn of the event loop; once a key's slice has committed, the table answers for
 * it. The merged-through mark lets a restart merge what a crash left in memory before it answers a key.
 */
export class SqliteRequestIndex {
  /** Committed, not yet merged. */
  private readonly recent = new Map<string, RequestKey>();
  private gathered: RequestKey[] = [];
  private gatherTimer: Timer | null = null;
  /** A sorted batch being merged a slice at a time, and the mark to record with its last slice. */
  private batch: { keys: RequestKey[]; next: number; through: string } | null = null;
  private recovered = false;
  /** Every key held (in `recent` or the table), and maybe some others: a key it rules out needs no read. */
  private filter: KeyFilter | null = null;
  /** A filter being filled from the table a slice per turn, with where the scan is. */
  private building: { filter: KeyFilter; after: [string, string, string] } | null = null;
  private readonly held: Statement<{ executionId: string }>;
  private readonly scan: Statement<[string, string, string]>;
  private readonly insert: Statement;
  private readonly setMark: Statement;
  private readonly remove: Statement;

  constructor(
    private readonly client: Database,
    /** The oldest execution id queued but not committed yet, if any. */
    private readonly oldestQueued: () => string | undefined,
    private readonly filterCapacity = FILTER_CAPACITY,
  ) {
    // A key already there holds the same execution: what a crash left unmerged is merged again at start.
    this.insert = client.prepare(
      "insert or ignore into execution_requests (principal_kind, principal_id, request_id, execution_id) values (?1, ?2, ?3, ?4)",
    );
    this.setMark = client.prepare(
      "insert into execution_requests_merged (id, through) values (1, ?1) on conflict (id) do update set through = excluded.through",
    );
    this.remove = client.prepare(
      "delete from execution_requests where principal_kind = ?1 and principal_id = ?2 and request_id = ?3",
    );
    this.held = client.prepare(
      `select execution_id as executionId from execution_requests
       where principal_kind = ?1 and principal_id = ?2 and request_id = ?3`,
    );
    this.scan = client.prepare(
      `select principal_kind, principal_id, request_id from execution_requests
       where (principal_kind, principal_id, request_id) > (?1, ?2, ?3)
       order by principal_kind, principal_id, request_id limit ?4`,
    );
  }

  /** The id of the committed execution holding the key, or null. */
  lookup(kind: string, principal: string, requestId: string): string | null {
    if (!this.recovered) this.recover();
    const key = keyOf(kind, principal, requestId);
    const recent = this.recent.get(key);
    if (recent) return recent[3];
    if (this.filter && !this.filter.mayHold(key)) return null;
    return this.held.get(kind, principal, requestId)?.executionId ?? null;
  }

  /** Records a key whose execution is now committed. */
  committed(row: { principalKind: string; principalId: string; requestId: string; id: string }): void {
    if (!this.recovered) this.recover();
    const key: RequestKey = [row.principalKind, row.principalId, row.requestId, row.id];
    const text = keyOf(row.principalKind, row.principalId, row.requestId);
    this.recent.set(text, key);
    this.filter?.add(text);
    this.building?.filter.add(text);
    if (this.filter?.full && !this.building) this.buildFilter(this.filter.capacity * 4);
    this.gathered.push(key);
    if (this.gathered.length >= MERGE_AT) this.startBatch();
    else this.gatherTimer ??= setTimeout(() => this.startBatch(), MERGE_AFTER_MS);
  }

  /** Forgets keys whose executions are being deleted (they ended long ago, so none is still in memory). */
  forget(keys: { principalKind: string; principalId: string; requestId: string }[]): void {
    this.client.transaction(() => {
      for (const { principalKind, principalId, requestId } of keys) {
        this.recent.delete(keyOf(principalKind, principalId, requestId));
        this.remove.run(principalKind, principalId, requestId);
      }
    })();
  }

  /** Merges every key now (the executions' queue is flushed first): before closing the database. */
  mergeAll(): void {
    while (this.batch || this.gathered.length > 0) {
      if (!this.batch) this.startBatch();
      this.mergeSlice();
    }
  }

  /** Merges every key and stops filling a filter: the database closes next. */
  close(): void {
    this.building = null;
    this.mergeAll();
  }

  /** Whether a complete filter answers for the table (lookups of keys it rules out read nothing). */
  get filtering(): boolean {
    return this.filter !== null;
  }

  private startBatch() {
    if (this.gatherTimer) clearTimeout(this.gatherTimer);
    this.gatherTimer = null;
    if (this.batch || this.gathered.length === 0) return;
    const keys = this.gathered;
    this.gathered = [];
    keys.sort(compareKeys);
    this.batch = { keys, next: 0, through: this.mark() };
    setImmediate(() => this.mergeSlice());
  }

  private mergeSlice() {
    const batch = this.batch;
    if (!batch) return;
    const slice = batch.keys.slice(batch.next, batch.next + SLICE);
    batch.next += slice.length;
    const last = batch.next >= batch.keys.length;
    this.client.transaction(() => {
      for (const key of slice) this.insert.run(...key);
      if (last) this.setMark.run(batch.through);
    })();
    for (const [kind, principal, requestId] of slice) this.recent.delete(keyOf(kind, principal, requestId));
    if (!last) {
      setImmediate(() => this.mergeSlice());
      return;
    }
    this.batch = null;
    if (this.gathered.length >= MERGE_AT) this.startBatch();
    else if (this.gathered.length > 0) this.gatherTimer ??= setTimeout(() => this.startBatch(), MERGE_AFTER_MS);
  }

  /** Every execution with a lower id is merged once the current batch is: the oldest not in it, or now. */
  private mark(): string {
    const id = this.oldestQueued() ?? Bun.randomUUIDv7();
    return uuidV7Floor(uuidV7Millis(id) - MARK_MARGIN_MS);
  }

  /** Merges what a previous process committed and did not merge, before the first key is answered. */
  private recover() {
    this.recovered = true;
    const mark = this.client
      .query<{ through: string }, []>("select through from execution_requests_merged where id = 1")
      .get();
    this.client
      .prepare(
        `insert or ignore into execution_requests (principal_kind, principal_id, request_id, execution_id)
         select principal_kind, principal_id, request_id, id from executions where id >= ?1
         order by principal_kind, principal_id, request_id`,
      )
      .run(mark?.through ?? "");
    this.buildFilter(this.filterCapacity);
  }

  /**
   * Fills a new filter from the table a slice per turn (lookups read the table, or the old filter,
   * meanwhile). The keys not merged yet go in first and every key committed meanwhile is added as it
   * comes, so no key can slip past the scan.
   */
  private buildFilter(capacity: number) {
    const filter = new KeyFilter(capacity);
    for (const text of this.recent.keys()) filter.add(text);
    this.building = { filter, after: ["", "", ""] };
    setImmediate(() => this.scanSlice());
  }

  private scanSlice() {
    const building = this.building;
    if (!building) return;
    const rows = this.scan.values(...building.after, FILTER_SCAN) as [string, string, string][];
    for (const [kind, principal, requestId] of rows) building.filter.add(keyOf(kind, principal, requestId));
    const last = rows.at(-1);
    if (building.filter.full) {
      this.buildFilter(building.filter.capacity * 4);
    } else if (last && rows.length === FILTER_SCAN) {
      building.after = last;
      setImmediate(() => this.scanSlice());
    } else {
      this.filter = building.filter;
      this.building = null;
    }
  }
}

function compareKeys(a: RequestKey, b: RequestKey): number {
  for (let i = 0; i < 3; i++) {
    const x = a[i] as string;
    const y = b[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}
