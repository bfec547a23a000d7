import type { Database, Statement } from "bun:sqlite";
import { uuidV7Floor, uuidV7Millis } from "../../../lib/ids.ts";
import {
  createRequestKeyTables,
  GENERATION_KEYS,
  type KeyName,
  type RequestKey,
  readMergeState,
  writeMergeState,
} from "./file.ts";
import { KeyFilter } from "./filter.ts";
import { ConnectionKeyWriter, type KeyWriterHost, WorkerKeyWriter } from "./writers.ts";

/**
 * Keys gathered before they are sorted and merged: the more at once, the more of them share an index page.
 * 16 384 costs the writer thread a third less CPU a key than 4 096 (~9 µs against ~13.5 once a generation
 * has 150 000 keys; 32 768: ~7.4, for twice the memory), for at most ~33 000 keys in memory under load
 * (this batch and the one merging): ~13 MiB of heap, against ~3 (BENCHMARKS.md, ninth session).
 */
export const MERGE_AT = 16_384;
/**
 * The longest a key waits for its merge when fewer arrive (it is answered from memory meanwhile): long enough
 * that a batch fills at ~8 000 invokes/s, where the writer's cost matters.
 */
const MERGE_AFTER_MS = 2000;
/**
 * Keys handed to the writer at once while a batch gathers (each its own small message): the serving thread
 * serialises a few hundred keys a time instead of a whole batch in one turn.
 */
const HAND_OVER_AT = 512;
/** Keys of a merged batch dropped from memory in one turn (all 16 384 at once held the serving thread 3-8 ms). */
const DROP_SLICE = 512;
/**
 * The merged-through mark stays this far behind the oldest key not merged: execution ids are UUIDv7
 * (time first), so a clock stepping back by less than this cannot hide an execution from the restart.
 */
const MARK_MARGIN_MS = 1000;
/** The first key filter's capacity; a full one is built again four times larger. */
const FILTER_CAPACITY = 1 << 16;
/**
 * While a key filter is built from the index: keys read at once, and how long a turn may read before it
 * lets requests run. 8 192 keys a turn stalled the serving thread 7-19 ms a turn under load (p99 doubled
 * while a filter was built: BENCHMARKS.md); a time bound holds on a slow machine as on a fast one.
 */
const FILTER_SCAN = 512;
const FILTER_TURN_MS = 1;
/** The name the request-key file is attached under on the database's connection. */
const SCHEMA = "requests";

/** A (principal, requestId) as one map key (the queued rows and the recent keys use the same). */
export const keyOf = (kind: string, principal: string, requestId: string) =>
  `${kind}\u0000${principal}\u0000${requestId}`;

/**
 * Which execution holds each (principal, requestId) on SQLite, decided exactly without writing a random
 * key on the serving thread: `executions` has no index on request_id, whose random inserts dirtied a page
 * each per commit, and merging them into a table of the database cost the serving thread more the larger
 * it grew (BENCHMARKS.md). The index is its own file (file.ts), written by a worker thread in
 * sorted batches; keys committed recently are held in memory until their batch has committed (one process
 * serves a SQLite database, so memory is the whole truth for them). Lookups read the file through the
 * database's connection, which has it attached, and only for keys the filter cannot rule out. The
 * merged-through mark lets a restart merge what a crash left in memory, or rebuild a lost file from
 * `executions`, before it answers a key.
 */
export class SqliteRequestIndex {
  /** Committed, not yet merged. */
  private readonly recent = new Map<string, RequestKey>();
  /** Committed keys waiting for their batch, each with its map key (`keyOf`). */
  private gathered: [string, RequestKey][] = [];
  /** How many of `gathered` the writer holds already (handed over, to be written by the next merge). */
  private handedOver = 0;
  private gatherTimer: Timer | null = null;
  /** The batch being merged, settled once its transaction has (one at a time, in order). */
  private merging: Promise<void> | null = null;
  private recovered = false;
  /** Every key held (in `recent` or the index), and maybe some others: a key it rules out needs no read. */
  private filter: KeyFilter | null = null;
  /** A filter being filled from the index a slice per turn, with where the scan is. */
  private building: { filter: KeyFilter; after: [number, string, string, string] } | null = null;
  private readonly writer: KeyWriterHost;
  /** Told of a failed merge (store.ts `onTrouble`). */
  warn: (message: string) => void = () => {};
  private readonly held: Statement<{ executionId: string }>;
  private readonly newest: Statement<{ generation: number }>;
  private readonly scan: Statement<[number, string, string, string]>;

  constructor(
    private readonly client: Database,
    /** The request-key file (file.ts `requestKeysPath`), attached to `client`. */
    path: string,
    /** The oldest execution id queued but not committed yet, if any. */
    private readonly oldestQueued: () => string | undefined,
    /** Sizes tests make small: the first key filter's capacity, and keys per generation of the file. */
    private readonly sizes: { filterCapacity: number; generationSize: number } = {
      filterCapacity: FILTER_CAPACITY,
      generationSize: GENERATION_KEYS,
    },
  ) {
    client.run(`attach database ?1 as ${SCHEMA}`, [path]);
    if (path !== ":memory:") client.exec(`PRAGMA ${SCHEMA}.journal_mode = WAL`);
    createRequestKeyTables(client, SCHEMA);
    this.writer =
      path === ":memory:"
        ? new ConnectionKeyWriter(client, SCHEMA, sizes.generationSize)
        : new WorkerKeyWriter(path, sizes.generationSize);
    this.held = client.prepare(
      `select execution_id as executionId from ${SCHEMA}.request_keys
       where generation = ?1 and principal_kind = ?2 and principal_id = ?3 and request_id = ?4`,
    );
    this.newest = client.prepare(`select generation from ${SCHEMA}.merged_through where id = 1`);
    this.scan = client.prepare(
      `select generation, principal_kind, principal_id, request_id from ${SCHEMA}.request_keys
       where (generation, principal_kind, principal_id, request_id) > (?1, ?2, ?3, ?4)
       order by generation, principal_kind, principal_id, request_id limit ?5`,
    );
  }

  /** The id of the committed execution holding the key, or null. */
  lookup(kind: string, principal: string, requestId: string): string | null {
    if (!this.recovered) this.recover();
    const key = keyOf(kind, principal, requestId);
    const recent = this.recent.get(key);
    if (recent) return recent[3];
    if (this.filter && !this.filter.mayHold(key)) return null;
    return this.stored(kind, principal, requestId);
  }

  /**
   * The file's answer: newest generation first (a replay is most often of a recent request). A key
   * in none costs a read per generation, paid by the ~1 % of new keys the filter cannot rule out.
   */
  private stored(kind: string, principal: string, requestId: string): string | null {
    const newest = this.newest.get()?.generation ?? 0;
    for (let generation = newest; generation >= 0; generation--) {
      const held = this.held.get(generation, kind, principal, requestId);
      if (held) return held.executionId;
    }
    return null;
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
    this.gathered.push([text, key]);
    // Also while a merge is in flight: the next batch is then handed over whole already.
    if (this.gathered.length - this.handedOver >= HAND_OVER_AT) this.handOver();
    if (this.gathered.length >= MERGE_AT) this.startBatch();
    else this.gatherTimer ??= setTimeout(() => this.startBatch(), MERGE_AFTER_MS);
  }

  /**
   * Forgets keys whose executions are being deleted (they ended long ago, so none is still in memory).
   * Written after every batch sent before it, so a key claimed again later names the new execution.
   */
  forget(keys: { principalKind: string; principalId: string; requestId: string }[]): Promise<void> {
    const names: KeyName[] = keys.map(({ principalKind, principalId, requestId }) => {
      this.recent.delete(keyOf(principalKind, principalId, requestId));
      return [principalKind, principalId, requestId];
    });
    return this.writer.write({ kind: "forget", keys: names });
  }

  /** Merges every key now (the executions' queue is flushed first): before closing the database. */
  async mergeAll(): Promise<void> {
    while (this.merging || this.gathered.length > 0) {
      if (!this.merging) this.startBatch();
      // A failed merge stops here: its keys are still in memory, and in `executions` for the next start.
      await this.merging;
    }
  }

  /**
   * Merges every key, stops filling a filter and stops the writer: the database closes next. Keys a
   * failed merge left out are merged by the next start, from the mark on.
   */
  async close(): Promise<void> {
    this.building = null;
    await this.mergeAll().catch(() => {});
    if (this.gatherTimer) clearTimeout(this.gatherTimer);
    this.gatherTimer = null;
    await this.writer.close();
  }

  /** Whether a complete filter answers for the index (lookups of keys it rules out read nothing). */
  get filtering(): boolean {
    return this.filter !== null;
  }

  private startBatch() {
    if (this.gatherTimer) clearTimeout(this.gatherTimer);
    this.gatherTimer = null;
    if (this.merging || this.gathered.length === 0) return;
    this.handOver();
    const batch = this.gathered;
    this.gathered = [];
    this.handedOver = 0;
    this.merging = this.writer
      .write({ kind: "merge", through: this.mark() })
      .then(
        () => this.dropMerged(batch, 0),
        (error: Error) => {
          // Still answered from memory; merged with the next batch (the mark has not moved). The writer
          // dropped the batch's keys (a new thread never had them): all of them are handed over again.
          this.gathered = batch.concat(this.gathered);
          this.handedOver = 0;
          this.warn(`merging ${batch.length} request keys failed (kept in memory, tried again): ${error.message}`);
          throw error;
        },
      )
      .finally(() => {
        this.merging = null;
        if (this.gathered.length >= MERGE_AT) this.startBatch();
        else if (this.gathered.length > 0) this.gatherTimer ??= setTimeout(() => this.startBatch(), MERGE_AFTER_MS);
      });
    this.merging.catch(() => {});
  }

  /** Hands the writer the gathered keys it does not hold yet. */
  private handOver() {
    for (let from = this.handedOver; from < this.gathered.length; from += HAND_OVER_AT) {
      this.writer.add(this.gathered.slice(from, from + HAND_OVER_AT).map(([, key]) => key));
    }
    this.handedOver = this.gathered.length;
  }

  /** Drops a merged batch's keys from memory, a slice a turn (lookups find them in the file meanwhile too). */
  private dropMerged(batch: [string, RequestKey][], from: number) {
    const end = Math.min(batch.length, from + DROP_SLICE);
    for (let i = from; i < end; i++) {
      const [text, key] = batch[i] as [string, RequestKey];
      // Only the entry of this execution: a key forgotten and claimed again names a newer one.
      if (this.recent.get(text) === key) this.recent.delete(text);
    }
    if (end < batch.length) setImmediate(() => this.dropMerged(batch, end));
  }

  /** Every execution with a lower id is merged once the current batch is: the oldest not in it, or now. */
  private mark(): string {
    const id = this.oldestQueued() ?? Bun.randomUUIDv7();
    return uuidV7Floor(uuidV7Millis(id) - MARK_MARGIN_MS);
  }

  /**
   * Merges what a previous process committed and did not merge (all of `executions` for a new file),
   * into the newest generation, before the first key is answered. The writer thread starts after this.
   */
  private recover() {
    this.client.transaction(() => {
      const state = readMergeState(this.client, SCHEMA);
      const { changes } = this.client
        .prepare(
          `insert or replace into ${SCHEMA}.request_keys (generation, principal_kind, principal_id, request_id, execution_id)
           select ?2, principal_kind, principal_id, request_id, id from main.executions where id >= ?1
           order by principal_kind, principal_id, request_id`,
        )
        .run(state.through, state.generation);
      if (changes > 0)
        writeMergeState(this.client, SCHEMA, { ...state, generationKeys: state.generationKeys + changes });
    })();
    // Only now: a merge that threw (the file locked) fails its claim, and the next claim tries it again.
    this.recovered = true;
    this.buildFilter(this.sizes.filterCapacity);
  }

  /**
   * Fills a new filter from the table a slice per turn, each at most ~FILTER_TURN_MS (lookups read the
   * table, or the old filter, meanwhile). The keys not merged yet go in first and every key committed meanwhile is added as it
   * comes, so no key can slip past the scan.
   */
  private buildFilter(capacity: number) {
    const filter = new KeyFilter(capacity);
    for (const text of this.recent.keys()) filter.add(text);
    this.building = { filter, after: [-1, "", "", ""] };
    setImmediate(() => this.scanSlice());
  }

  private scanSlice() {
    const building = this.building;
    if (!building) return;
    const until = performance.now() + FILTER_TURN_MS;
    do {
      const rows = this.scan.values(...building.after, FILTER_SCAN) as [number, string, string, string][];
      for (const [, kind, principal, requestId] of rows) building.filter.add(keyOf(kind, principal, requestId));
      const last = rows.at(-1);
      if (building.filter.full) {
        this.buildFilter(building.filter.capacity * 4);
        return;
      }
      if (!last || rows.length < FILTER_SCAN) {
        this.filter = building.filter;
        this.building = null;
        return;
      }
      building.after = last;
    } while (performance.now() < until);
    setImmediate(() => this.scanSlice());
  }
}
