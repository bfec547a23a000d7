import type { Database } from "bun:sqlite";
import { mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { ABANDONED_FORK_MS, FORKING, type ForkCopier, type ForkedTable, noneCopied } from "../drizzle/fork-tables.ts";
import type { ScratchAnswer, ScratchRequest } from "./fork-scratch/worker.ts";
import { workerEntry } from "./worker-entry.ts";

/**
 * How long a slice of a SQLite fork writes, in one transaction of the serving connection, and how long it
 * then leaves the event loop to everything else: a request waits a slice at most at each of its turns of
 * the loop (docs/decisions/forks.md has the figures that chose them).
 */
export const FORK_SLICE_MS = 2;
export const FORK_PAUSE_MS = 2;

/**
 * SQLite's fork. One `INSERT … SELECT` would hold the database's one write lock for its whole length
 * (0.6-0.8 s for 100,000 entities: every environment's writes wait that long). Instead, in two steps:
 * 1. a worker thread (fork-scratch/worker.ts), on a connection of its own, reads the source's rows in one
 *    transaction (WAL: one snapshot of the source for the whole copy, whatever is written meanwhile) and
 *    writes them, already the fork's, into a scratch database file: its lock, not the database's;
 * 2. the serving connection ATTACHes the scratch file and copies it in with native `INSERT … SELECT` in
 *    slices of a few milliseconds by rowid, each its own transaction, with the event loop left to the
 *    requests between them.
 * The fork's row stays `FORKING` until the caller shows it; each slice refreshes its `updated_at`, so a
 * copy that stopped is told from one under way. The scratch file goes at the end, failed or not; one a
 * crash left is removed by a later fork. An in-memory database has no second connection: it is copied
 * in one transaction.
 */
export function sqliteForkCopier(client: Database, path: string): ForkCopier {
  return {
    async copy(source, target, tables) {
      if (path === ":memory:") return copyAtOnce(client, source, target, tables);
      const folder = scratchFolder(path);
      mkdirSync(folder, { recursive: true });
      removeStaleScratch(folder, Date.now() - ABANDONED_FORK_MS);
      const scratch = join(folder, `${SCRATCH_PREFIX}${target}-${crypto.randomUUID()}.db`);
      try {
        const t0 = performance.now();
        const filled = await fillScratch({ path, scratch, source, target, tables });
        const t1 = performance.now();
        const copied = noneCopied();
        if (!filled.sourceFound) return { sourceFound: false, activeVersion: null, copied };
        const n = await copyFromScratch(client, scratch, target, tables, filled.rows);
        if (process.env.FORK_TRACE) console.error(`TRACE scratch ${(t1 - t0).toFixed(0)} ms, copy ${(performance.now() - t1).toFixed(0)} ms`);
        tables.forEach((table, i) => {
          if (table.counted) copied[table.counted] = n[i] ?? 0;
        });
        return { sourceFound: true, activeVersion: filled.activeVersion, copied };
      } finally {
        removeScratch(scratch);
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

/** Scratch files of forks, beside the database (its DATA_DIR): `tmp/fork-<target>-<uuid>.db`. */
export const scratchFolder = (path: string) => join(dirname(path), "tmp");
export const SCRATCH_PREFIX = "fork-";

/**
 * Removes the scratch files a stopped fork left (a crash between its two steps), once as old as an
 * abandoned fork's heartbeat: a fork under way in another process wrote its file moments ago.
 */
function removeStaleScratch(folder: string, before: number): void {
  for (const name of readdirSync(folder)) {
    if (!name.startsWith(SCRATCH_PREFIX)) continue;
    const file = join(folder, name);
    try {
      if (statSync(file).mtimeMs < before) rmSync(file, { force: true });
    } catch {
      // Removed meanwhile by another fork's cleaning.
    }
  }
}

function removeScratch(scratch: string): void {
  for (const suffix of ["", "-journal", "-wal", "-shm"]) rmSync(`${scratch}${suffix}`, { force: true });
}

/** Step 1, on a thread: the source's rows, from one snapshot, into the scratch file. */
function fillScratch(request: ScratchRequest): Promise<Extract<ScratchAnswer, { ok: true }>> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerEntry("fork-scratch"));
    worker.onmessage = ({ data }: MessageEvent<ScratchAnswer>) => {
      worker.terminate();
      if (data.ok) resolve(data);
      else reject(new Error(`the fork's scratch copy failed: ${data.message}`));
    };
    worker.onerror = (event) => {
      event.preventDefault();
      worker.terminate();
      reject(new Error(`the fork's scratch copy failed: ${event.message}`));
    };
    worker.postMessage(request);
  });
}

/** Rows a first slice copies; later slices are sized from the time the last one took. */
const FIRST_SLICE_ROWS = 128;

/** Step 2, on the serving connection: the scratch file's rows into the database, in slices. */
async function copyFromScratch(
  client: Database,
  scratch: string,
  target: number,
  tables: ForkedTable[],
  rows: number[],
): Promise<number[]> {
  const schema = `fork_scratch_${target}`;
  // ATTACH is refused inside a transaction; the serving connection's are synchronous, so none is open
  // between turns of the loop, but wait for one that is, should that change.
  while (client.inTransaction) await Bun.sleep(FORK_PAUSE_MS);
  client.query(`attach database ? as ${schema}`).run(scratch);
  try {
    const heartbeat = client.prepare("update environments set updated_at = ? where id = ?");
    const copied: number[] = [];
    let sliceRows = FIRST_SLICE_ROWS;
    for (const [i, table] of tables.entries()) {
      const total = rows[i] ?? 0;
      const columns = table.columns.join(", ");
      const insert = client.prepare(
        `insert into main.${table.table} (${columns}) select ${columns} from ${schema}.${table.table}
          where rowid > ? and rowid <= ? order by rowid`,
      );
      // CREATE … AS numbered the scratch rows 1..total in order.
      let inserting = 0;
      const slice = client.transaction((from: number, to: number) => {
        const began = performance.now();
        const n = insert.run(from, to).changes;
        inserting = performance.now() - began;
        heartbeat.run(Date.now(), target);
        return n;
      });
      let n = 0;
      try {
        for (let from = 0; from < total; ) {
          const to = Math.min(total, from + sliceRows);
          const began = performance.now();
          n += slice(from, to);
          const took = inserting;
          void began;
          if (process.env.FORK_TRACE) (globalThis as any).sliceLog = [...((globalThis as any).sliceLog ?? []), [table.table, to - from, +took.toFixed(2)]];
          // Sized to fill FORK_SLICE_MS, growing at most twofold a slice (a first slice may be cold).
          sliceRows = Math.max(
            16,
            Math.min(sliceRows * 2, Math.round(((to - from) * (FORK_SLICE_MS / 2)) / Math.max(took, 0.05))),
          );
          from = to;
          // A pause, not one turn of the loop: a request takes several turns (its claim's group commit, its
          // settlement's), each of which would otherwise wait for a slice.
          if (from < total) await Bun.sleep(FORK_PAUSE_MS);
        }
      } finally {
        insert.finalize();
      }
      copied.push(n);
      if (process.env.FORK_TRACE) { const l = (globalThis as any).sliceLog ?? []; (globalThis as any).sliceLog = []; const ts = l.map((x: any) => x[2]).sort((a: number, b: number) => a - b); console.error(`TRACE ${table.table}: ${l.length} slices, rows median ${l.map((x: any) => x[1]).sort((a: number, b: number) => a - b)[l.length >> 1]}, ms p50 ${ts[ts.length >> 1]} p90 ${ts[Math.floor(ts.length * 0.9)]} max ${ts[ts.length - 1]} sum ${ts.reduce((a: number, b: number) => a + b, 0).toFixed(0)}`); }
      if (total > 0) await Bun.sleep(FORK_PAUSE_MS);
    }
    heartbeat.finalize();
    return copied;
  } finally {
    while (client.inTransaction) await Bun.sleep(FORK_PAUSE_MS);
    client.exec(`detach database ${schema}`);
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
