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

  // Bytes shared with forks (docs/decisions/shared-files.md): a row whose blobEnvironment is B reads
  // environment B's bytes at its path. "This environment" below is the one the store is bound to.

  /** The other environments whose row at `path` reads this environment's bytes, by id. */
  referencing(path: string): Promise<number[]>;
  /**
   * After this environment's bytes at `path` were copied to environment `to`'s own: `to`'s row owns them
   * (blobEnvironment null) and every other row that read this environment's reads `to`'s, in one
   * statement. False (nothing changed) when `to`'s row no longer reads this environment's bytes.
   */
  handOver(path: string, to: number): Promise<boolean>;
  /**
   * After environment `from`'s bytes at `path` were copied to this environment's own: this environment's
   * row owns them. False when it no longer read `from`'s.
   */
  ownBytes(path: string, from: number): Promise<boolean>;
  /**
   * Takes the service-wide lease on the bytes of (this environment, `path`) until `until`, or false
   * when someone holds it (a lease past its end is taken over): copies of shared bytes are made under it.
   */
  leaseBytes(path: string, now: number, until: number): Promise<boolean>;
  releaseBytes(path: string): Promise<void>;
}
