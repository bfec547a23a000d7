import type { InferSelectModel } from "drizzle-orm";
import type * as pg from "./schema/pg.ts";
import type * as sqlite from "./schema/sqlite.ts";

/**
 * The sizes of inputs and outputs as JSON text (UTF-8 bytes), stored beside them: each store writes them
 * with the values, lists select by them (`Listed`), so no list reads a value to measure it.
 */
export const STORED_SIZES = ["inputBytes", "outputBytes"] as const;
type StoredSizes = (typeof STORED_SIZES)[number];

/**
 * Rows leave out their `environment`: a store bound to an environment (`Store.environment(id)`) writes
 * and filters by it, so no caller can name another. Rows that service-wide work reads across every
 * environment (claims of due work) carry it: `InEnvironment<Row>`.
 */
type Row<T> = Omit<T, "environment">;
export type InEnvironment<T> = T & { environment: number };

/**
 * Rows as the schemas declare them: one source of truth for both dialects. Timestamps are epoch
 * milliseconds. The types come from the PostgreSQL schema; `Agree` below fails to compile when the
 * SQLite schema reads a different shape.
 */
export type ExecutionRow = Omit<InferSelectModel<typeof pg.executions>, "instance" | StoredSizes | "environment"> & {
  /**
   * The instance that claimed a function execution (PostgreSQL; instances.ts), as reads answer it: written
   * by the store with the claim, so rows the engine makes leave it out. Null on SQLite (one process).
   */
  instance?: string | null;
};
export type RunRow = Omit<InferSelectModel<typeof pg.workflowRuns>, StoredSizes | "environment">;
export type StepRow = Omit<InferSelectModel<typeof pg.workflowSteps>, StoredSizes | "environment">;
export type ReleaseRow = Row<InferSelectModel<typeof pg.releases>>;
export type TokenRow = Row<InferSelectModel<typeof pg.apiTokens>>;
export type EnvironmentRow = InferSelectModel<typeof pg.environments>;
export type OrganizationRow = InferSelectModel<typeof pg.organizations>;
export type ScopedKeyRow = InferSelectModel<typeof pg.scopedKeys>;
export type GrantRow = InferSelectModel<typeof pg.grants>;
export type UserRow = InferSelectModel<typeof pg.users>;
export type OAuthRecord = InferSelectModel<typeof pg.oauthRecords>;
export type FileRow = Row<InferSelectModel<typeof pg.files>>;
/** One line an execution logged (`ctx.log`). */
export type LogRow = Row<InferSelectModel<typeof pg.executionLogs>>;
export type ScheduleTickRow = Row<InferSelectModel<typeof pg.scheduleTicks>>;
export type ScheduledRow = Row<InferSelectModel<typeof pg.scheduledInvocations>>;
/** A file's metadata as written: its upload fields may be left out (a file not sent as an input). */
type UploadFields = "executionId" | "field" | "filename" | "blobEnvironment";
export type NewFileRow = Omit<FileRow, UploadFields> & Partial<Pick<FileRow, UploadFields>>;

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Table = keyof typeof pg & keyof typeof sqlite;
/** The tables whose rows the two schemas read differently: never, or this module fails to compile naming them. */
type Disagreeing = {
  [T in Table]: Same<InferSelectModel<(typeof pg)[T]>, InferSelectModel<(typeof sqlite)[T]>> extends true ? never : T;
}[Table];
const _schemasAgree: [Disagreeing] extends [never] ? true : Disagreeing = true;
