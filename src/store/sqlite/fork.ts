import { Database, type Statement } from "bun:sqlite";
import { foreground } from "../../lib/foreground.ts";
import { FORKING, type ForkCopier, type ForkedTable, noneCopied } from "../drizzle/fork-tables.ts";

/**
 * How long a slice of a SQLite fork runs, its commit included, in one transaction of the serving
 * connection; then the fork leaves the event loop to requests: a pause, and then until no young request
 * is being answered (lib/foreground.ts), for FORK_MAX_WAIT_MS at most. docs/decisions/forks.md has the
 * figures that chose them.
 */
export const FORK_SLICE_MS = 2;
export const FORK_PAUSE_MS = 1;
export const FORK_MAX_WAIT_MS = 4;

/**
 * SQLite's fork. One `INSERT … SELECT` would hold the database's one write lock for its whole length
 * (0.6-0.8 s for 100,000 entities: every environment's writes wait that long), so the rows are read by a
 * second connection holding one read transaction (WAL: one snapshot of the source for the whole copy,
 * whatever is written meanwhile) and written by the serving connection in slices of a few milliseconds, each
 * its own transaction, with the event loop left to the requests between them. The fork's row stays `FORKING` until the caller
 * shows it; each slice refreshes its `updated_at`, so a copy that stopped is told from one under way.
 * An in-memory database has no second connection: it is copied in one transaction.
 */
export function sqliteForkCopier(client: Database, path: string): ForkCopier {
  return {
    async copy(source, target, tables) {
      if (path === ":memory:") return copyAtOnce(client, source, target, tables);
      const reader = new Database(path, { readonly: true, strict: true });
      try {
        reader.exec("PRAGMA busy_timeout = 5000");
        reader.exec("BEGIN");
        // The snapshot is taken by the transaction's first read.
        const row = reader.query("select active_version from environments where id = ?").get(source) as {
          active_version: string | null;
        } | null;
        const copied = noneCopied();
        if (!row) return { sourceFound: false, activeVersion: null, copied };
        const heartbeat = client.prepare("update environments set updated_at = ? where id = ?");
        for (const table of tables) {
          const n = await copyInSlices(reader, client, heartbeat, table, source, target);
          if (table.counted) copied[table.counted] = n;
        }
        return { sourceFound: true, activeVersion: row.active_version, copied };
      } finally {
        reader.close();
      }
    },

    async abandoned(before) {
      const rows = client
        .query("select id from environments where changed = ? and updated_at < ?")
        .all(FORKING, before) as { id: number }[];
      return rows.map((row) => row.id);
    },
  };
}

async function copyInSlices(
  reader: Database,
  client: Database,
  heartbeat: Statement,
  { table, columns, only }: ForkedTable,
  source: number,
  target: number,
): Promise<number> {
  const read = reader.query(
    `select ${columns.join(", ")} from ${table} where environment = ?${only ? ` and ${only}` : ""}`,
  );
  const insert = client.prepare(
    `insert into ${table} (${columns.join(", ")}) values (${columns.map(() => "?").join(", ")})`,
  );
  const valuesOf = (row: Record<string, unknown>) =>
    columns.map((column) =>
      column === "environment" ? target : column === "blob_environment" ? (row[column] ?? source) : row[column],
    ) as never[];
  const rows = (read.iterate(source) as IterableIterator<Record<string, unknown>>)[Symbol.iterator]();
  let done = false;
  const slice = client.transaction((budget: number) => {
    let n = 0;
    while (n < budget) {
      const next = rows.next();
      if (next.done) {
        done = true;
        break;
      }
      insert.run(...valuesOf(next.value));
      n += 1;
    }
    heartbeat.run(Date.now(), target);
    return n;
  });
  // Rows a slice: sized from the last slices' time a row, commit included (a commit writes every page
  // the slice's rows dirtied, as long again as the inserts when they land all over an index).
  let msPerRow = 0.05;
  let total = 0;
  try {
    for (;;) {
      const budget = Math.max(8, Math.min(4096, Math.round(FORK_SLICE_MS / msPerRow)));
      const started = performance.now();
      const n = slice(budget);
      total += n;
      if (done) return total;
      msPerRow = (msPerRow + (performance.now() - started) / n) / 2;
      await foreground.giveWay(FORK_MAX_WAIT_MS, FORK_PAUSE_MS);
    }
  } finally {
    read.finalize();
    insert.finalize();
  }
}

function copyAtOnce(client: Database, source: number, target: number, tables: ForkedTable[]) {
  return client.transaction(() => {
    const row = client.query("select active_version from environments where id = ?").get(source) as {
      active_version: string | null;
    } | null;
    const copied = noneCopied();
    if (!row) return { sourceFound: false, activeVersion: null, copied };
    for (const { table, columns, only, counted } of tables) {
      const values = columns.map((column) =>
        column === "environment" ? "?2" : column === "blob_environment" ? "coalesce(blob_environment, ?1)" : column,
      );
      const result = client
        .query(
          `insert into ${table} (${columns.join(", ")}) select ${values.join(", ")} from ${table}
            where environment = ?1${only ? ` and ${only}` : ""}`,
        )
        .run(source, target);
      if (counted) copied[counted] = result.changes;
    }
    return { sourceFound: true, activeVersion: row.active_version, copied };
  })();
}
