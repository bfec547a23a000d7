import type { FileRow, NewFileRow } from "./rows.ts";
import type { PrincipalKind } from "./statuses.ts";

export interface FileListQuery {
  /** Omitted: every owner's files (a service key). */
  owner?: { kind: PrincipalKind; id: string };
  /** Only paths that start with this ("" for all). */
  prefix: string;
  /** Keyset: only paths after this one, in path order. */
  afterPath?: string;
  limit: number;
}

/** Metadata of one environment's stored files; their bytes are in the storage driver (src/files/). */
export interface FileStore {
  get(path: string): Promise<FileRow | null>;
  /** Inserts or replaces the metadata of `row.path` (created_at is kept on replace). */
  put(row: NewFileRow): Promise<void>;
  delete(path: string): Promise<void>;
  /** Files in path order. */
  list(query: FileListQuery): Promise<FileRow[]>;
  /** The uploads of these executions. */
  uploadsOf(executionIds: string[]): Promise<FileRow[]>;
  /**
   * Records that the signed upload grant known by `grantHash` (expiring at `expiresAt`) takes its
   * upload now; false when it was used already, on any instance.
   */
  spendUploadGrant(grantHash: string, expiresAt: number, now: number): Promise<boolean>;
  /** Makes a grant usable again: the upload it was used for stored nothing. */
  refundUploadGrant(grantHash: string): Promise<void>;
}
