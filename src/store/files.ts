import type { FileRow, NewFileRow } from "./rows.ts";

/** Metadata of stored files; their bytes are in the storage driver (src/files/). */
export interface FileStore {
  get(path: string): Promise<FileRow | null>;
  /** Inserts or replaces the metadata of `row.path` (created_at is kept on replace). */
  put(row: NewFileRow): Promise<void>;
  delete(path: string): Promise<void>;
  /** The uploads of these executions. */
  uploadsOf(executionIds: string[]): Promise<FileRow[]>;
}
