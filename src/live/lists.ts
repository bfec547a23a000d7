import { type TObject, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { canSee, toExecutionSummary, withInstance } from "../engine/executions.ts";
import type { ListChanges } from "../engine/list-feed.ts";
import { executionListFilter, runListFilter } from "../engine/list-filters.ts";
import { toRunListItem } from "../engine/workflows/view.ts";
import { PublicError } from "../lib/errors.ts";
import { isObject } from "../lib/values.ts";
import type { Principal } from "../sdk/index.ts";
import { executionUrl, runUrl } from "../wire/urls.ts";

/** Which list a live list follows: `subscribe-executions` or `subscribe-runs`. */
export type ListKind = "executions" | "runs";

/** A live list's filter: the fields `GET /executions` (action, status, caller) or `GET /runs` (workflow, status) take. */
export type ListFilter = Record<string, string>;

const FILTERS: Record<ListKind, TObject> = {
  executions: Type.Object(executionListFilter, { additionalProperties: false }),
  runs: Type.Object(runListFilter, { additionalProperties: false }),
};

const refused = (message: string) => new PublicError("invalid_request", message);

/** The filter of a subscribe message, checked by the rules the list endpoint's query is (engine/list-filters.ts). */
export function listFilterOf(kind: ListKind, principal: Principal, filter: unknown): ListFilter {
  if (filter === undefined || filter === null) return {};
  if (!isObject(filter)) throw refused("filter must be an object");
  const schema = FILTERS[kind];
  const [issue] = Value.Errors(schema, filter);
  if (issue) {
    const field = issue.path.slice(1);
    throw refused(
      field in schema.properties
        ? `filter.${field}: ${issue.message}`
        : `filter: unknown field ${JSON.stringify(field)} (${Object.keys(schema.properties).join(", ")})`,
    );
  }
  const checked = filter as ListFilter;
  if (checked.caller !== undefined && principal.kind !== "service") {
    throw new PublicError("access_denied", "only a service key may list another caller's executions");
  }
  return checked;
}

type Owned = { principalKind: string; principalId: string; status: string };

const callerMatches = (filter: ListFilter, row: Owned) =>
  filter.caller === undefined || filter.caller === `${row.principalKind}:${row.principalId}`;

/**
 * The rows of a change a subscriber may see and its filter keeps, as the list endpoint shows them, newest
 * first: the caller's own (every one for a service key), of this environment only (the feed reads its store).
 */
export function listItems(
  kind: ListKind,
  principal: Principal,
  filter: ListFilter,
  changes: ListChanges,
  publicUrl: string,
): unknown[] {
  const keep = (row: Owned) =>
    canSee(principal, row as never) &&
    callerMatches(filter, row) &&
    (filter.status === undefined || filter.status === row.status);
  if (kind === "runs") {
    return changes.runs
      .filter((run) => keep(run) && (filter.workflow === undefined || filter.workflow === run.workflow))
      .sort((a, b) => (a.id < b.id ? 1 : -1))
      .map((run) => ({ ...toRunListItem(run), statusUrl: runUrl(publicUrl, run.id) }));
  }
  return changes.executions
    .filter((row) => keep(row) && (filter.action === undefined || filter.action === row.action))
    .sort((a, b) => (a.id < b.id ? 1 : -1))
    .map((row) => ({
      ...withInstance(toExecutionSummary(row, changes.uploads.get(row.id)), row, principal),
      statusUrl: executionUrl(publicUrl, row.id),
    }));
}
