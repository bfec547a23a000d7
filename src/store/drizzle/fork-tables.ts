import { getTableColumns, getTableName, type Table } from "drizzle-orm";
import type { ForkCopied } from "../control.ts";
import type { SharedTables } from "./database.ts";

/**
 * `changed` of an environment row being forked: no reader of environments sees it (changedSince asks for
 * `changed > n ≥ 0`, the others filter it out) until the copy is complete and it takes the next number.
 */
export const FORKING = -1;
/** A row still `FORKING` whose `updated_at` (the copy's heartbeat) is this old was left by a fork that stopped. */
export const ABANDONED_FORK_MS = 60_000;

/** What a fork copies of the source, and how (docs/decisions/forks.md). */
export interface ForkOptions {
  data: boolean;
  secrets: boolean;
}

/** One table a fork copies: its columns as the database names them, the source's rows it takes. */
export interface ForkedTable {
  /** What it counts as in `ForkCopied`; attributes are copied uncounted. */
  counted: keyof ForkCopied | null;
  table: string;
  columns: string[];
  /** A condition on the source's rows beyond the environment (plain SQL both databases read alike). */
  only: string | null;
}

const columnsOf = (table: Table) => Object.values(getTableColumns(table)).map((column) => column.name);

/**
 * The tables a fork copies, each with every column of the schema (a column added later is copied
 * without a change here). In every row the environment becomes the fork's; a file row's
 * `blob_environment` becomes the source's where the source held its own bytes.
 */
export function forkedTables(t: SharedTables, options: ForkOptions): ForkedTable[] {
  const table = (counted: ForkedTable["counted"], of: Table, only: string | null = null): ForkedTable => ({
    counted,
    table: getTableName(of),
    columns: columnsOf(of),
    only,
  });
  const copies = [
    table("releases", t.releases),
    table("variables", t.variables, options.secrets ? null : "not secret"),
  ];
  if (options.data) {
    copies.push(
      table(null, t.dataAttrs),
      table("entities", t.dataEntities),
      table("links", t.dataLinks),
      table("files", t.files),
    );
  }
  return copies;
}

export const noneCopied = (): ForkCopied => ({ releases: 0, variables: 0, entities: 0, links: 0, files: 0 });

/**
 * Copies an environment's rows into a fork (one per dialect: pg/fork.ts, sqlite/fork.ts), all from one
 * snapshot of the source. The fork's row exists already (`FORKING`); the copier does not touch it but
 * to keep its heartbeat.
 */
export interface ForkCopier {
  /** Copies `tables` from `source` to `target`; answers the source's active version as the snapshot saw it. */
  copy(
    source: number,
    target: number,
    tables: ForkedTable[],
  ): Promise<{ sourceFound: boolean; activeVersion: string | null; copied: ForkCopied }>;
  /** The forks left `FORKING` since before `before` by a copy that stopped (none still being copied). */
  abandoned(before: number): Promise<number[]>;
}
