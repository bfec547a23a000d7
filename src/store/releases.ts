import type { ReleaseRow } from "./rows.ts";

export type ReleaseSummary = Omit<ReleaseRow, "bundle">;

/** A release as its history lists it: no bundle, no manifest. */
export type ReleaseListRow = Pick<ReleaseRow, "version" | "bundleHash" | "createdAt" | "publishedBy">;

/** Where a page of the history starts: after this release (newest first: published before it). */
export interface ReleaseKey {
  createdAt: number;
  version: string;
}

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
  /** A release as published, with its manifest but not its bundle; null when none has that version. */
  published(version: string): Promise<ReleaseSummary | null>;
  /** Oldest first, without their bundles. */
  list(): Promise<ReleaseSummary[]>;
  /** Newest first (by publication, then version), `limit` at most, those after `after` when given. */
  history(query: { limit: number; after?: ReleaseKey }): Promise<ReleaseListRow[]>;
  active(): Promise<ActiveRelease>;
  /**
   * Makes `version` live; returns the new revision (it grows on every activation, so instances poll one
   * row). `schedules`: whether the release has schedules (unknown: assumed so): its environment's next
   * tick is then due at `at` (hosting mode's schedule loop takes it), else there is none.
   */
  activate(version: string, at: number, schedules?: boolean): Promise<number>;
}
