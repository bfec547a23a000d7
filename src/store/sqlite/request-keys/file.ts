import type { Database, Statement } from "bun:sqlite";

/** One execution's idempotency key and the execution that holds it: [principalKind, principalId, requestId, executionId]. */
export type RequestKey = [string, string, string, string];
/** A key without its execution: [principalKind, principalId, requestId]. */
export type KeyName = [string, string, string];

/** What the request-key writer is asked to do; each is one transaction of the request-key file. */
export type KeyWrite = { kind: "merge"; keys: RequestKey[]; through: string } | { kind: "forget"; keys: KeyName[] };

/**
 * What the index asks of the writer once it has handed it keys (`KeyBuffer.add`): a merge writes every
 * key handed over before it, with the mark.
 */
export type IndexWrite = { kind: "merge"; through: string } | { kind: "forget"; keys: KeyName[] };

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
 * Writes the index: a merge is one transaction of sorted keys, in the newest generation (a new one once
 * it is full), and the mark. A key written again names the newer execution: after retention deleted an
 * execution, its key may name a new one.
 */
export class RequestKeyWriter {
  private readonly insert: Statement;
  private readonly remove: Statement;

  constructor(
    private readonly db: Database,
    private readonly schema = "main",
    private readonly generationSize = GENERATION_KEYS,
  ) {
    this.insert = db.prepare(
      `insert or replace into ${schema}.request_keys (generation, principal_kind, principal_id, request_id, execution_id)
       values (?1, ?2, ?3, ?4, ?5)`,
    );
    this.remove = db.prepare(
      `delete from ${schema}.request_keys
       where generation = ?1 and principal_kind = ?2 and principal_id = ?3 and request_id = ?4`,
    );
  }

  write(op: KeyWrite): void {
    this.db.transaction(() => {
      // Read in the transaction: a restart's recovery may have written the file since the last write.
      const state = readMergeState(this.db, this.schema);
      if (op.kind === "forget") {
        for (const key of op.keys) {
          for (let generation = 0; generation <= state.generation; generation++) this.remove.run(generation, ...key);
        }
        return;
      }
      let { generation, generationKeys } = state;
      if (generationKeys > 0 && generationKeys + op.keys.length > this.generationSize) {
        generation++;
        generationKeys = 0;
      }
      // Sorted, so neighbours in the batch share the index's pages.
      for (const key of op.keys.sort(compareKeys)) this.insert.run(generation, ...key);
      writeMergeState(this.db, this.schema, {
        through: op.through,
        generation,
        generationKeys: generationKeys + op.keys.length,
      });
    })();
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

/**
 * The writer's side of a batch: keys handed over a few hundred at a time while the batch gathers, so that
 * no turn of the serving thread stalls serialising a whole batch (16 384 keys at once: 8-13 ms), then
 * written by the merge that follows them. A merge drops the keys it was to write whether it committed
 * or not: the index hands a failed batch's keys over again, to this writer or to a new thread's.
 */
export class KeyBuffer {
  private keys: RequestKey[] = [];

  constructor(private readonly writer: RequestKeyWriter) {}

  add(keys: RequestKey[]): void {
    for (const key of keys) this.keys.push(key);
  }

  write(op: IndexWrite): void {
    if (op.kind === "forget") {
      this.writer.write(op);
      return;
    }
    const keys = this.keys;
    this.keys = [];
    this.writer.write({ kind: "merge", keys, through: op.through });
  }
}
