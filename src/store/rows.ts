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
 * Rows as the schemas declare them: one source of truth for both dialects. Timestamps are epoch
 * milliseconds. The types come from the PostgreSQL schema; `Agree` below fails to compile when the
 * SQLite schema reads a different shape.
 */
export type ExecutionRow = Omit<InferSelectModel<typeof pg.executions>, "instance" | StoredSizes>;
export type RunRow = Omit<InferSelectModel<typeof pg.workflowRuns>, StoredSizes>;
export type StepRow = Omit<InferSelectModel<typeof pg.workflowSteps>, StoredSizes>;
export type ReleaseRow = InferSelectModel<typeof pg.releases>;
export type TokenRow = InferSelectModel<typeof pg.apiTokens>;
export type UserRow = InferSelectModel<typeof pg.users>;
export type OAuthRecord = InferSelectModel<typeof pg.oauthRecords>;
export type FileRow = InferSelectModel<typeof pg.files>;
/** One line an execution logged (`ctx.log`). */
export type LogRow = InferSelectModel<typeof pg.executionLogs>;
export type ScheduleTickRow = InferSelectModel<typeof pg.scheduleTicks>;
export type ScheduledRow = InferSelectModel<typeof pg.scheduledInvocations>;
/** A file's metadata as written: its upload fields may be left out (a file not sent as an input). */
type UploadFields = "executionId" | "field" | "filename";
export type NewFileRow = Omit<FileRow, UploadFields> & Partial<Pick<FileRow, UploadFields>>;

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Agree<Table extends keyof typeof pg & keyof typeof sqlite> = Same<
  InferSelectModel<(typeof pg)[Table]>,
  InferSelectModel<(typeof sqlite)[Table]>
>;
const agree = <T extends true[]>(checks: T) => checks;
agree<
  [
    Agree<"executions">,
    Agree<"workflowRuns">,
    Agree<"workflowSteps">,
    Agree<"releases">,
    Agree<"environment">,
    Agree<"apiTokens">,
    Agree<"users">,
    Agree<"oauthRecords">,
    Agree<"files">,
    Agree<"usedUploadGrants">,
    Agree<"instances">,
    Agree<"dataAttrs">,
    Agree<"dataEntities">,
    Agree<"dataLinks">,
    Agree<"executionLogs">,
    Agree<"scheduleTicks">,
    Agree<"scheduledInvocations">,
  ]
>([true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true]);
