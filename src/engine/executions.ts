import { canonicalJson, sha256Hex } from "../lib/canonical-json.ts";
import { iso } from "../lib/values.ts";
import type { Principal } from "../sdk/index.ts";
import { type ExecutionListRow, LISTED_VALUES } from "../store/executions.ts";
import type { ExecutionRow } from "../store/rows.ts";
import type { Truncations, Upload, Execution as WireExecution } from "../wire/views.ts";

/** The engine's words for executions, as adapters use them: an execution is the stored record. */
export type Execution = ExecutionRow;
export { EXECUTION_STATUSES, type ExecutionStatus, isTerminal } from "../store/statuses.ts";

/**
 * In lists, an input, output or error message larger than this is left out (`inputTruncated`, …, with
 * its size) and never read from the database, and so is an input after a large output or error message
 * (LISTED_VALUES), so a page of 200 holds at most ~200 × 2 × 4 KiB of values however large its executions
 * are. `GET /executions/{id}` answers them whole.
 */
export const LIST_VALUE_BYTES = 4 * 1024;

/**
 * The largest output an action, a workflow or a step may return, as JSON (MAX_OUTPUT_BYTES): as much as an
 * invocation may send in (8 MiB). A larger one fails the execution and is not stored.
 */
export const DEFAULT_MAX_OUTPUT_BYTES = 8 * 1024 * 1024;

/** What makes two invocations of one request id the same: the action, the input, and the files' digests. */
export const inputFingerprint = (action: string, input: unknown, files: Record<string, unknown>) =>
  sha256Hex(canonicalJson({ action, files, input })); // in key order: canonicalJson's fast path

/** A user sees its own executions; a service key acts as administrator and sees every one. */
export function canSee(principal: Principal, row: Pick<ExecutionRow, "principalKind" | "principalId">): boolean {
  return principal.kind === "service" || (row.principalKind === principal.kind && row.principalId === principal.id);
}

/** The public shape of an execution: output only once succeeded, error fields only once failed or canceled. */
export type ExecutionView = WireExecution;

export function toExecutionView(row: ExecutionRow, uploads: Upload[] = []): ExecutionView {
  const view: ExecutionView = {
    id: row.id,
    requestId: row.requestId,
    action: row.action,
    kind: row.kind,
    status: row.status,
    input: row.input,
    principal: { kind: row.principalKind, id: row.principalId },
    releaseVersion: row.releaseVersion,
    contractHash: row.contractHash,
    uploads,
    createdAt: new Date(row.createdAt).toISOString(),
    startedAt: iso(row.startedAt),
    finishedAt: iso(row.finishedAt),
  };
  if (row.status === "succeeded") view.output = row.output;
  if (row.errorCode !== null) view.errorCode = row.errorCode;
  if (row.errorMessage !== null) view.errorMessage = row.errorMessage;
  if (row.scheduledBy !== null) view.scheduledBy = row.scheduledBy;
  return view;
}

/** The view with the instance that ran it, for a service key (an instance id names a host; users see none). */
export function withInstance<View extends ExecutionView>(
  view: View,
  row: Pick<ExecutionRow, "instance">,
  principal: Principal,
): View {
  if (principal.kind === "service" && row.instance) view.instance = row.instance;
  return view;
}

/** The stored sizes a list reads beside the values it may leave out (executions and runs alike). */
export interface ListedSizes {
  inputBytes: number;
  outputBytes: number;
  errorMessageBytes: number;
}

/**
 * A view as lists show it: the values the list left in the database (the first over LIST_VALUE_BYTES in
 * LISTED_VALUES' order, and those after it) are replaced by `<name>Truncated: { bytes }`; the by-id
 * endpoints answer them whole.
 */
export const boundForList = <View extends object>(view: View, sizes: ListedSizes): View & Truncations =>
  leaveOutLarge(
    view,
    LISTED_VALUES.map((name) => [name, sizes[`${name}Bytes`]]),
  );

/**
 * The view with values left out as a bounded read leaves them: `sizes` in the order the store read them;
 * from the first over LIST_VALUE_BYTES on, each present one is replaced by `<name>Truncated: { bytes }`.
 */
export function leaveOutLarge<View extends object>(view: View, sizes: readonly (readonly [string, number])[]): View {
  const bounded = { ...view } as Record<string, unknown>;
  let over = false;
  for (const [name, bytes] of sizes) {
    over ||= bytes > LIST_VALUE_BYTES;
    if (!over || bytes === 0) continue;
    delete bounded[name];
    bounded[`${name}Truncated`] = { bytes };
  }
  return bounded as View;
}

/** The size of a value as JSON text, in UTF-8 bytes (0 when absent). */
export const jsonBytes = (value: unknown): number =>
  value === undefined ? 0 : Buffer.byteLength(JSON.stringify(value) ?? "");

/** An execution as `GET /executions` lists it. */
export const toExecutionSummary = (row: ExecutionListRow, uploads: Upload[] = []): ExecutionView =>
  boundForList(toExecutionView(row, uploads), row);
