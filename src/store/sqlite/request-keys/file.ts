import type { Database, Statement } from "bun:sqlite";

/**
 * The kind a key is stored and hashed under: the principal's kind in environment 1, so that the keys a
 * single-mode database wrote still answer its request ids; elsewhere prefixed with the environment's id
 * (`2:user`: no principal kind has a colon), so the same (principal, requestId) in two environments is two keys.
 */
export const keyKind = (environment: number, kind: string) => (environment === 1 ? kind : `${environment}:${kind}`);
/** `keyKind` over a row of `executions`, in SQL (what merges read). */
export const KEY_KIND_SQL = `case when environment = 1 then principal_kind else environment || ':' || principal_kind end`;

/** A key without its execution: [kind as stored (index.ts `keyKind`), principalId, requestId]. */
export type KeyName = [string, string, string];

/**
 * What the request-key writer is asked to do; each is one transaction of the request-key file. A merge
 * reads the keys of the executions whose rowids are in `rows` (first and last, inclusive) from the
 * executions table and records the mark `through`.
 */
export type KeyWrite = { kind: "merge"; rows: [number, number]; through: string } | { kind: "forget"; keys: KeyName[] };

/**
 * Keys per generation. A batch of random keys dirties about one page per key once its B-tree has more
 * pages than the batch has keys, so the cost of a merge grows with the tree it lands in: keys land in
 * the newest generation only, a tree that stops growing here (`bench/request-key-merge.ts`).
 */
export const GENERATION_KEYS = 1 << 18;

/**
 * The request-key index lives in its own SQLite file beside the database (`actuate.db` →
 * `actuate-requests.db`): its random inserts then dirty neither the database's write-ahead log nor the
 * serving connection's page cache, and a worker thread can write it while the server answers requests.
 * It is derived data: lost or stale, it is rebuilt from `executions` (index.ts).
 */
export function requestKeysPath(databasePath: string): string {
  if (databasePath === ":memory:") return ":memory:";
  return /\.db$/.test(databasePath) ? databasePath.replace(/\.db$/, "-requests.db") : `${databasePath}-requests.db`;
}

/**
 * The file's two tables, in `schema` ("main" on the file's own connection, the attached name on the
 * database's): the keys, by generation, and one row saying which executions are in (every one whose id
 * sorts below `through`), which generation takes keys now, and how many it holds.
 */
export function createRequestKeyTables(db: Database, schema: string): void {
  db.exec(
    `create table if not exists ${schema}.request_keys (
       generation integer not null,
       principal_kind text not null, principal_id text not null, request_id text not null, execution_id text not null,
       primary key (generation, principal_kind, principal_id, request_id)
     ) without rowid;
     create table if not exists ${schema}.merged_through (
       id integer primary key check (id = 1), through text not null,
       generation integer not null, generation_keys integer not null
     )`,
  );
}

export interface MergeState {
  through: string;
  generation: number;
  generationKeys: number;
}

/** The index's mark and newest generation ("" and 0 for a new file: nothing is known to be in it). */
export function readMergeState(db: Database, schema: string): MergeState {
  const row = db
    .query<MergeState, []>(
      `select through, generation, generation_keys as generationKeys from ${schema}.merged_through where id = 1`,
    )
    .get();
  return row ?? { through: "", generation: 0, generationKeys: 0 };
}

export function writeMergeState(db: Database, schema: string, state: MergeState): void {
  db.query(
    `insert into ${schema}.merged_through (id, through, generation, generation_keys) values (1, ?1, ?2, ?3)
     on conflict (id) do update set through = excluded.through, generation = excluded.generation,
       generation_keys = excluded.generation_keys`,
  ).run(state.through, state.generation, state.generationKeys);
}

/**
 * Writes the index. A merge reads the keys of a range of `executions` rows by rowid (rowids grow as rows
 * are inserted: one process writes the database), sorts them and writes them in the newest generation (a
 * new one once it is full), with the mark, in one transaction of the request-key file. A key written again
 * names the newer execution: after retention deleted an execution, its key may name a new one. Reading the
 * keys here, rather than being handed them, keeps the serving thread from holding and sending every key.
 */
export class RequestKeyWriter {
  private readonly read: Statement;
  private readonly insert: Statement;
  private readonly remove: Statement;

  constructor(
    private readonly db: Database,
    /** Where the request-key tables are, and where `executions` is, on this connection. */
    private readonly schemas: { keys: string; executions: string },
    private readonly generationSize = GENERATION_KEYS,
  ) {
    const { keys, executions } = schemas;
    this.read = db.prepare(
      `select ${KEY_KIND_SQL}, principal_id, request_id, id from ${executions}.executions where rowid between ?1 and ?2`,
    );
    this.insert = db.prepare(
      `insert or replace into ${keys}.request_keys (generation, principal_kind, principal_id, request_id, execution_id)
       values (?1, ?2, ?3, ?4, ?5)`,
    );
    this.remove = db.prepare(
      `delete from ${keys}.request_keys
       where generation = ?1 and principal_kind = ?2 and principal_id = ?3 and request_id = ?4`,
    );
  }

  write(op: KeyWrite): void {
    if (op.kind === "forget") this.forget(op.keys);
    else this.merge(op.rows, op.through);
  }

  private merge(rows: [number, number], through: string): void {
    const keys = this.keysOf(rows);
    const schema = this.schemas.keys;
    this.db.transaction(() => {
      // Read in the transaction: a restart's recovery may have written the file since the last write.
      let { generation, generationKeys } = readMergeState(this.db, schema);
      if (generationKeys > 0 && generationKeys + keys.length > this.generationSize) {
        generation++;
        generationKeys = 0;
      }
      // Sorted, so neighbours in the batch share the index's pages.
      for (const key of keys) this.insert.run(generation, ...key);
      writeMergeState(this.db, schema, { through, generation, generationKeys: generationKeys + keys.length });
    })();
  }

  private forget(keys: KeyName[]): void {
    this.db.transaction(() => {
      const { generation: newest } = readMergeState(this.db, this.schemas.keys);
      for (const key of keys) {
        for (let generation = 0; generation <= newest; generation++) this.remove.run(generation, ...key);
      }
    })();
  }

  /**
   * The keys of the rows `first` to `last`, sorted. Read a slice a statement, before the write's transaction,
   * and sorted after: a read holds a snapshot of the database, which keeps its write-ahead log from being
   * checkpointed past it and from starting over, so no read may last the whole merge (the log grew to twice
   * its bound when one did: test/store/sqlite-checkpoints.test.ts).
   */
  private keysOf([first, last]: [number, number]): Key[] {
    const keys: Key[] = [];
    for (let from = first; from <= last; from += READ_SLICE) {
      for (const key of this.read.values(from, Math.min(last, from + READ_SLICE - 1)) as Key[]) keys.push(key);
    }
    return keys.sort(compareKeys);
  }
}

/** Rowids read by one statement of a merge. */
const READ_SLICE = 4096;

/** [kind as stored, principalId, requestId, executionId], as the merge reads it. */
type Key = [string, string, string, string];

function compareKeys(a: Key, b: Key): number {
  for (let i = 0; i < 3; i++) {
    const x = a[i] as string;
    const y = b[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}
