import { canSee, EXECUTION_STATUSES, toExecutionSummary, withInstance } from "../engine/executions.ts";
import type { ListChanges } from "../engine/list-feed.ts";
import { RUN_STATUSES, toRunListItem } from "../engine/workflows/view.ts";
import { PublicError } from "../lib/errors.ts";
import { isObject } from "../lib/values.ts";
import type { Principal } from "../sdk/index.ts";

/** Which list a live list follows: `subscribe-executions` or `subscribe-runs`. */
export type ListKind = "executions" | "runs";

/** A live list's filter: the fields `GET /executions` (action, status, caller) or `GET /runs` (workflow, status) take. */
export type ListFilter = Record<string, string>;

const NAME = /^[A-Za-z0-9_.-]{1,200}$/;
/** `<kind>:<id>` as `GET /executions` checks `caller`: an id of 1 to 256 characters, none a control character. */
const isCaller = (value: string) => {
  const id = value.replace(/^(user|service):/, "");
  return id !== value && id.length >= 1 && id.length <= 256 && ![...id].some((c) => c.charCodeAt(0) < 0x20);
};

const FIELDS: Record<ListKind, Record<string, (value: string) => boolean>> = {
  executions: {
    action: (v) => NAME.test(v),
    status: (v) => (EXECUTION_STATUSES as readonly string[]).includes(v),
    caller: isCaller,
  },
  runs: {
    workflow: (v) => NAME.test(v),
    status: (v) => (RUN_STATUSES as readonly string[]).includes(v),
  },
};

const refused = (message: string) => new PublicError("invalid_request", message);

/** The filter of a subscribe message, checked as the list endpoint checks its query; throws a PublicError. */
export function listFilterOf(kind: ListKind, principal: Principal, filter: unknown): ListFilter {
  if (filter === undefined || filter === null) return {};
  if (!isObject(filter)) throw refused("filter must be an object");
  const checked: ListFilter = {};
  for (const [name, value] of Object.entries(filter)) {
    const valid = FIELDS[kind][name];
    if (!valid)
      throw refused(`filter: unknown field ${JSON.stringify(name)} (${Object.keys(FIELDS[kind]).join(", ")})`);
    if (typeof value !== "string" || !valid(value)) throw refused(`filter.${name}: not a valid value`);
    checked[name] = value;
  }
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
      .map((run) => ({ ...toRunListItem(run), statusUrl: `${publicUrl}/runs/${run.id}` }));
  }
  return changes.executions
    .filter((row) => keep(row) && (filter.action === undefined || filter.action === row.action))
    .sort((a, b) => (a.id < b.id ? 1 : -1))
    .map((row) => ({
      ...withInstance(toExecutionSummary(row, changes.uploads.get(row.id)), row, principal),
      statusUrl: `${publicUrl}/executions/${row.id}`,
    }));
}
