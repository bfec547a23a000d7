import type { Database, Statement } from "bun:sqlite";
import { loggable } from "../../../lib/database-errors.ts";
import { uuidV7Floor, uuidV7Millis } from "../../../lib/ids.ts";
import {
  createRequestKeyTables,
  GENERATION_KEYS,
  KEY_KIND_SQL,
  type KeyName,
  keyKind,
  RequestKeyWriter,
  readMergeState,
  writeMergeState,
} from "./file.ts";
import { hashKey, KeyFilter } from "./filter.ts";
import { RecentKeys, secondHash } from "./recent.ts";
import { ConnectionKeyWriter, type KeyWriterHost, WorkerKeyWriter } from "./writers.ts";

/**
 * Keys gathered before they are sorted and merged: the more at once, the more of them share an index page.
 * 32 768 costs the writer thread about half the CPU a key of 16 384 (~5 µs against ~9-11 once a generation
 * has 150 000 keys; 65 536 no less than 32 768), for at most ~65 000 keys in memory under load (this batch
 * and the one merging): ~6 MiB of typed arrays and ids (recent.ts; BENCHMARKS.md, twelfth session).
 */
export const MERGE_AT = 32_768;
/**
 * The longest a key waits for its merge when fewer arrive (it is answered from memory meanwhile): long enough
 * that a batch fills at ~8 000 invokes/s, where the writer's cost matters. A restart merges what a crash
 * left unmerged from the executions (`recover`), so a longer wait costs a crash a longer recovery only.
 */
const MERGE_AFTER_MS = 4000;
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
/** How long after a failed read (a locked or damaged file) a filter's build starts over. */
const FILTER_RETRY_MS = 10_000;
/** The name the request-key file is attached under on the database's connection. */
const SCHEMA = "requests";

/** A (principal, requestId) as one map key (the queued rows and the recent keys use the same); `kind` as `keyKind` makes it. */
export const keyOf = (kind: string, principal: string, requestId: string) =>
  `${kind}\u0000${principal}\u0000${requestId}`;

/** A key's text (`keyOf`) and its two hashes: worked out once a claim, for its lookup and its commit. */
export interface HashedKey {
  text: string;
  /** `hashKey`: what the filter takes. */
  first: number;
  second: number;
}

export function hashedKey(environment: number, kind: string, principal: string, requestId: string): HashedKey {
  const text = keyOf(keyKind(environment, kind), principal, requestId);
  return { text, first: hashKey(text), second: secondHash(text) };
}

/**
 * Which execution holds each (principal, requestId) on SQLite, decided exactly without writing a random
 * key on the serving thread: `executions` has no index on request_id, whose random inserts dirtied a page
 * each per commit, and merging them into a table of the database cost the serving thread more the larger
 * it grew (BENCHMARKS.md). The index is its own file (file.ts), written by a worker thread in
 * sorted batches it reads from `executions` itself, by the rowids the serving thread committed; keys
 * committed recently are held in memory, as hashes (recent.ts), until their batch has committed (one
 * process serves a SQLite database, so memory is the whole truth for them). Lookups read the file through
 * the database's connection, which has it attached, and only for keys the filter cannot rule out. The
 * merged-through mark lets a restart merge what a crash left in memory, or rebuild a lost file from
 * `executions`, before it answers a key.
 */
export class SqliteRequestIndex {
  /**
   * Keys committed and not merged yet, oldest first: the last takes new keys, those before it wait for the
   * merge in flight (or, after one failed, for the next).
   */
  private tables: RecentKeys[] = [new RecentKeys()];
  /** The lowest and highest rowid of the executions committed since the last merge began (none: ∞, -∞). */
  private firstRow = Number.POSITIVE_INFINITY;
  private lastRow = Number.NEGATIVE_INFINITY;
  private gatherTimer: Timer | null = null;
  /** The batch being merged, settled once its transaction has (one at a time, in order). */
  private merging: Promise<void> | null = null;
  private recovered = false;
  /** Every key held (in memory or the index), and maybe some others: a key it rules out needs no read. */
  private filter: KeyFilter | null = null;
  /** A filter's build to start over, after one failed to read the file. */
  private filterRetry: Timer | null = null;
  /** A filter being filled from the index a slice per turn, with where the scan is. */
  private building: { filter: KeyFilter; after: [number, string, string, string] } | null = null;
  private readonly writer: KeyWriterHost;
  /** Told of a failed merge (store.ts `onTrouble`). */
  warn: (message: string) => void = () => {};
  private readonly held: Statement<{ executionId: string }>;
  private readonly holds: Statement<{ held: number }>;
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
        ? new ConnectionKeyWriter(
            new RequestKeyWriter(client, { keys: SCHEMA, executions: "main" }, sizes.generationSize),
          )
        : new WorkerKeyWriter(path, client.filename, sizes.generationSize);
    this.held = client.prepare(
      `select execution_id as executionId from ${SCHEMA}.request_keys
       where generation = ?1 and principal_kind = ?2 and principal_id = ?3 and request_id = ?4`,
    );
    this.holds = client.prepare(
      `select 1 as held from main.executions
       where id = ?1 and environment = ?2 and principal_kind = ?3 and principal_id = ?4 and request_id = ?5`,
    );
    this.newest = client.prepare(`select generation from ${SCHEMA}.merged_through where id = 1`);
    this.scan = client.prepare(
      `select generation, principal_kind, principal_id, request_id from ${SCHEMA}.request_keys
       where (generation, principal_kind, principal_id, request_id) > (?1, ?2, ?3, ?4)
       order by generation, principal_kind, principal_id, request_id limit ?5`,
    );
  }

  /** The id of the committed execution holding the key in `environment`, or null. */
  lookup(
    environment: number,
    kind: string,
    principal: string,
    requestId: string,
    { first, second } = hashedKey(environment, kind, principal, requestId),
  ): string | null {
    if (!this.recovered) this.recover();
    // An entry is a candidate: the execution it names is read to tell a key from another with its hashes.
    const holds = (id: string) => this.holds.get(id, environment, kind, principal, requestId) !== null;
    for (let i = this.tables.length - 1; i >= 0; i--) {
      const id = (this.tables[i] as RecentKeys).find(first, second, holds);
      if (id !== null) return id;
    }
    if (this.filter && !this.filter.mayHold(first)) return null;
    return this.stored(keyKind(environment, kind), principal, requestId);
  }

  /**
   * The file's answer: newest generation first (a replay is most often of a recent request). A key
   * in none costs a read per generation, paid by the ~1 % of new keys the filter cannot rule out.
   */
  private stored(storedKind: string, principal: string, requestId: string): string | null {
    const newest = this.newest.get()?.generation ?? 0;
    for (let generation = newest; generation >= 0; generation--) {
      const held = this.held.get(generation, storedKind, principal, requestId);
      if (held) return held.executionId;
    }
    return null;
  }

  /** Records the key of an execution of `environment` now committed, as the row `rowid` of `executions`. */
  committed(
    environment: number,
    row: { principalKind: string; principalId: string; requestId: string; id: string },
    rowid: number,
    { first, second } = hashedKey(environment, row.principalKind, row.principalId, row.requestId),
  ): void {
    if (!this.recovered) this.recover();
    const gathering = this.tables.at(-1) as RecentKeys;
    gathering.add(first, second, row.id);
    this.filter?.add(first);
    this.building?.filter.add(first);
    if (this.filter?.full && !this.building) this.buildFilter(this.filter.capacity * 4);
    // Both ends: a rowid freed by a deletion can be given again, below the highest.
    if (rowid < this.firstRow) this.firstRow = rowid;
    if (rowid > this.lastRow) this.lastRow = rowid;
    if (gathering.size >= MERGE_AT) this.startBatch();
    else this.gatherTimer ??= setTimeout(() => this.startBatch(), MERGE_AFTER_MS);
  }

  /**
   * Forgets keys whose executions are deleted. Written after every batch sent before it, so a key claimed
   * again later names the new execution. An entry in memory needs no forgetting: `lookup` reads the
   * execution it names, which is gone.
   */
  forget(
    keys: { environment: number; principalKind: string; principalId: string; requestId: string }[],
  ): Promise<void> {
    const names: KeyName[] = keys.map(({ environment, principalKind, principalId, requestId }) => [
      keyKind(environment, principalKind),
      principalId,
      requestId,
    ]);
    return this.writer.write({ kind: "forget", keys: names });
  }

  /** Merges every key now (the executions' queue is flushed first): before closing the database. */
  async mergeAll(): Promise<void> {
    while (this.merging || this.unmerged) {
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
    if (this.filterRetry) clearTimeout(this.filterRetry);
    await this.mergeAll().catch(() => {});
    if (this.gatherTimer) clearTimeout(this.gatherTimer);
    this.gatherTimer = null;
    await this.writer.close();
  }

  /** Whether a complete filter answers for the index (lookups of keys it rules out read nothing). */
  get filtering(): boolean {
    return this.filter !== null;
  }

  /** Whether executions were committed since the last merge began (or a failed merge left theirs). */
  private get unmerged(): boolean {
    return this.firstRow <= this.lastRow;
  }

  private startBatch() {
    if (this.gatherTimer) clearTimeout(this.gatherTimer);
    this.gatherTimer = null;
    if (this.merging || !this.unmerged) return;
    const rows: [number, number] = [this.firstRow, this.lastRow];
    this.firstRow = Number.POSITIVE_INFINITY;
    this.lastRow = Number.NEGATIVE_INFINITY;
    // The tables so far hold the keys of these rows; new keys go to a new one meanwhile (to the empty one
    // there is, after a failed merge, so merges failing for a long time do not pile up tables).
    if ((this.tables.at(-1) as RecentKeys).size > 0) this.tables.push(new RecentKeys());
    const sealed = this.tables.length - 1;
    this.merging = this.writer
      .write({ kind: "merge", rows, through: this.mark() })
      .then(
        () => {
          this.tables.splice(0, sealed);
        },
        (error: Error) => {
          // Still answered from memory; the next merge reads these rows again (the mark has not moved).
          this.firstRow = Math.min(this.firstRow, rows[0]);
          this.lastRow = Math.max(this.lastRow, rows[1]);
          // Counted here, not per batch: the sealed tables are still there, as no merge starts meanwhile.
          const keys = this.tables.slice(0, sealed).reduce((sum, table) => sum + table.size, 0);
          this.warn(`merging ${keys} request keys failed (kept in memory, tried again): ${loggable(error)}`);
          throw error;
        },
      )
      .finally(() => {
        this.merging = null;
        if ((this.tables.at(-1) as RecentKeys).size >= MERGE_AT) this.startBatch();
        else if (this.unmerged) this.gatherTimer ??= setTimeout(() => this.startBatch(), MERGE_AFTER_MS);
      });
    this.merging.catch(() => {});
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
           select ?2, ${KEY_KIND_SQL}, principal_id, request_id, id from main.executions where id >= ?1
           order by 2, 3, 4`,
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
    this.filterRetry = null;
    const filter = new KeyFilter(capacity);
    for (const table of this.tables) table.forEachFirstHash((hash) => filter.add(hash));
    this.building = { filter, after: [-1, "", "", ""] };
    setImmediate(() => this.scanSlice());
  }

  private scanSlice() {
    const building = this.building;
    if (!building) return;
    const until = performance.now() + FILTER_TURN_MS;
    do {
      let rows: [number, string, string, string][];
      try {
        rows = this.scan.values(...building.after, FILTER_SCAN) as [number, string, string, string][];
      } catch (error) {
        // Not a crash of the server (this runs on its own turn): lookups read the file meanwhile, as before
        // the first filter, and the build starts over a little later.
        this.building = null;
        this.warn(
          `building the request-key filter failed (tried again in ${FILTER_RETRY_MS / 1000} s): ${loggable(error)}`,
        );
        this.filterRetry = setTimeout(() => this.buildFilter(building.filter.capacity), FILTER_RETRY_MS);
        this.filterRetry.unref();
        return;
      }
      for (const [, kind, principal, requestId] of rows)
        building.filter.add(hashKey(keyOf(kind, principal, requestId)));
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
