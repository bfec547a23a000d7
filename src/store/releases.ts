import type { ReleaseRow } from "./rows.ts";

export type ReleaseSummary = Omit<ReleaseRow, "bundle">;

export interface ActiveRelease {
  version: string | null;
  revision: number;
  /** When the active version was last activated (ms), null when none ever was. */
  activatedAt: number | null;
}

/** Published releases (immutable once stored) and which one is live. */
export interface ReleaseStore {
  insert(row: ReleaseRow): Promise<void>;
  get(version: string): Promise<ReleaseRow | null>;
  /** Oldest first, without their bundles. */
  list(): Promise<ReleaseSummary[]>;
  active(): Promise<ActiveRelease>;
  /** Makes `version` live; returns the new revision (it grows on every activation, so instances poll one row). */
  activate(version: string, at: number): Promise<number>;
}
