import { type TObject, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { canSee, toExecutionSummary, withInstance } from "../engine/executions.ts";
import type { ListChanges, Was } from "../engine/list-feed.ts";
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

/** What one change means to one live list: its rows as the list shows them, and the ids that left it. */
export interface ListPush {
  items: unknown[];
  /** Rows in the list's `status` that moved to another (always empty without that filter). */
  left: string[];
}

const newestFirst = (a: { id: string }, b: { id: string }) => (a.id < b.id ? 1 : -1);

/**
 * The rows of a change a subscriber may see and its filter keeps, as the list endpoint shows them, newest
 * first: the caller's own (every one for a service key), of this environment only (the feed reads its store).
 * With a `status` filter, the rows the rest of the filter keeps that were last sent in that status and are
 * now in another are named in `left`, and so are those now in another that a list may hold though the feed
 * never sent their status (`Was` null): a list showing them drops them, an id it lacks is no news.
 */
export function listItems(
  kind: ListKind,
  principal: Principal,
  filter: ListFilter,
  changes: ListChanges,
  publicUrl: string,
): ListPush {
  const visible = (row: Owned) => canSee(principal, row as never) && callerMatches(filter, row);
  const inStatus = (row: Owned) => filter.status === undefined || filter.status === row.status;
  const split = <T extends Owned & { id: string }>(rows: T[], were: Map<string, Was>) => {
    const kept = rows.filter(visible).sort(newestFirst);
    const leaving = (row: T) => {
      const was = were.get(row.id);
      return !inStatus(row) && was !== undefined && (was === null || was === filter.status);
    };
    return { items: kept.filter(inStatus), left: kept.filter(leaving).map((row) => row.id) };
  };
  if (kind === "runs") {
    const { items, left } = split(
      changes.runs.filter((run) => filter.workflow === undefined || filter.workflow === run.workflow),
      changes.were.runs,
    );
    return { items: items.map((run) => ({ ...toRunListItem(run), statusUrl: runUrl(publicUrl, run.id) })), left };
  }
  const { items, left } = split(
    changes.executions.filter((row) => filter.action === undefined || filter.action === row.action),
    changes.were.executions,
  );
  return {
    items: items.map((row) => ({
      ...withInstance(toExecutionSummary(row, changes.uploads.get(row.id)), row, principal),
      statusUrl: executionUrl(publicUrl, row.id),
    })),
    left,
  };
}
