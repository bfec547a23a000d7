// The scratch copy of a SQLite fork (sqlite/fork.ts starts one thread a fork): its own connection to the
// database reads the source's rows from one snapshot and writes them, the environment already rewritten,
// into a scratch database file ATTACHed to it. Writing the scratch file takes the scratch file's lock, not
// the database's: the serving connection's commits never wait on this thread. Answers once, then ends.
// Listed as an entrypoint of `bun run build`, so the compiled binary carries it.
import { Database } from "bun:sqlite";
import { messageOf } from "../../../lib/errors.ts";
import type { ForkedTable } from "../../drizzle/fork-tables.ts";

export interface ScratchRequest {
  path: string;
  scratch: string;
  source: number;
  target: number;
  tables: ForkedTable[];
}
export type ScratchAnswer =
  | { ok: true; sourceFound: boolean; activeVersion: string | null; rows: number[] }
  | { ok: false; message: string };

declare const self: Worker;

/** Each table's rows as the fork's: its environment the target, a file's bytes where the source's were. */
function forkedColumns({ columns }: ForkedTable, source: number, target: number): string {
  return columns
    .map((column) =>
      column === "environment"
        ? `${target} as environment`
        : column === "blob_environment"
          ? `coalesce(blob_environment, ${source}) as blob_environment`
          : column,
    )
    .join(", ");
}

function fill({ path, scratch, source, target, tables }: ScratchRequest): ScratchAnswer {
  const db = new Database(path, { strict: true });
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    db.query("attach database ? as scratch").run(scratch);
    // A scratch file nobody recovers: a crash leaves it to the next fork's cleaning.
    db.exec("PRAGMA scratch.journal_mode = OFF");
    db.exec("PRAGMA scratch.synchronous = OFF");
    db.exec("BEGIN");
    // The snapshot of the source is taken by the transaction's first read of the database.
    const row = db.query("select active_version from main.environments where id = ?").get(source) as {
      active_version: string | null;
    } | null;
    if (!row) {
      db.exec("ROLLBACK");
      return { ok: true, sourceFound: false, activeVersion: null, rows: [] };
    }
    const rows = tables.map((table) => {
      // Integers from the store, not input: written into the statement, as CREATE … AS takes no parameters.
      db.run(
        `create table scratch.${table.table} as select ${forkedColumns(table, source, target)} from main.${table.table}
          where environment = ${source}${table.only ? ` and ${table.only}` : ""}${table.columns.includes("id") ? " order by id" : ""}`,
      );
      return (db.query(`select count(*) as n from scratch.${table.table}`).get() as { n: number }).n;
    });
    db.exec("COMMIT");
    return { ok: true, sourceFound: true, activeVersion: row.active_version, rows };
  } finally {
    db.close();
  }
}

self.onmessage = (event: MessageEvent<ScratchRequest>) => {
  let answer: ScratchAnswer;
  try {
    answer = fill(event.data);
  } catch (error) {
    answer = { ok: false, message: messageOf(error) };
  }
  self.postMessage(answer);
};
