import type { Database, Statement } from "bun:sqlite";

/** One execution's idempotency key and the execution that holds it: [principalKind, principalId, requestId, executionId]. */
export type RequestKey = [string, string, string, string];
/** A key without its execution: [principalKind, principalId, requestId]. */
export type KeyName = [string, string, string];

/** What the request-key writer is asked to do; each is one transaction of the request-key file. */
export type KeyWrite = { kind: "merge"; keys: RequestKey[]; through: string } | { kind: "forget"; keys: KeyName[] };

/**
 * The request-key index lives in its own SQLite file beside the database (`actuate.db` →
 * `actuate-requests.db`): its random inserts then dirty neither the database's write-ahead log nor the
 * serving connection's page cache, and a worker thread can write it while the server answers requests.
 * It is derived data: lost or stale, it is rebuilt from `executions` (request-index.ts).
 */
export function requestKeysPath(databasePath: string): string {
  if (databasePath === ":memory:") return ":memory:";
  return /\.db$/.test(databasePath) ? databasePath.replace(/\.db$/, "-requests.db") : `${databasePath}-requests.db`;
}

/** The file's two tables, in `schema` ("main" on the file's own connection, the attached name on the database's). */
export function createRequestKeyTables(db: Database, schema: string): void {
  db.exec(
    `create table if not exists ${schema}.request_keys (
       principal_kind text not null, principal_id text not null, request_id text not null, execution_id text not null,
       primary key (principal_kind, principal_id, request_id)
     ) without rowid;
     create table if not exists ${schema}.merged_through (id integer primary key check (id = 1), through text not null)`,
  );
}

/**
 * Writes the index: a merge is one transaction of sorted keys and the merged-through mark (every
 * execution whose id sorts below it has its key here). A key written again names the newer execution:
 * after retention deleted an execution, its key may name a new one.
 */
export class RequestKeyWriter {
  private readonly insert: Statement;
  private readonly remove: Statement;
  private readonly setMark: Statement;

  constructor(
    private readonly db: Database,
    schema = "main",
  ) {
    this.insert = db.prepare(
      `insert or replace into ${schema}.request_keys (principal_kind, principal_id, request_id, execution_id)
       values (?1, ?2, ?3, ?4)`,
    );
    this.remove = db.prepare(
      `delete from ${schema}.request_keys where principal_kind = ?1 and principal_id = ?2 and request_id = ?3`,
    );
    this.setMark = db.prepare(
      `insert into ${schema}.merged_through (id, through) values (1, ?1)
       on conflict (id) do update set through = excluded.through`,
    );
  }

  write(op: KeyWrite): void {
    this.db.transaction(() => {
      if (op.kind === "forget") {
        for (const key of op.keys) this.remove.run(...key);
        return;
      }
      // Sorted, so neighbours in the batch share the index's pages.
      for (const key of op.keys.sort(compareKeys)) this.insert.run(...key);
      this.setMark.run(op.through);
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
