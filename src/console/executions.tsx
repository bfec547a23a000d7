/** @jsxImportSource preact */

import type { ActuateClient } from "../client/index.ts";
import { EXECUTION_STATUSES } from "../wire/statuses.ts";
import { LoadFailure } from "./alert.tsx";
import { ExecutionDetail } from "./execution-detail.tsx";
import { durationOf } from "./format.ts";
import { type ExecutionFilters, hrefOf } from "./route.ts";
import { ScrollBox } from "./scroll-box.tsx";
import { EmptyState, LoadingState, ShortId, StatusBadge, When } from "./ui.tsx";
import { useLiveList } from "./use-live-list.ts";
import { usePoll } from "./use-poll.ts";

/** `byCaller`: the caller filter is offered (service keys; a user sending it is refused). */
export function ExecutionsPage(props: {
  client: ActuateClient;
  id?: string;
  filters: ExecutionFilters;
  byCaller: boolean;
}) {
  return props.id ? (
    <ExecutionDetail client={props.client} id={props.id} />
  ) : (
    <ExecutionList client={props.client} filters={props.filters} byCaller={props.byCaller} />
  );
}

function ExecutionList(props: { client: ActuateClient; filters: ExecutionFilters; byCaller: boolean }) {
  const { client, filters } = props;
  const filterKey = JSON.stringify(filters);
  // Read once, then kept current by the session socket (subscribe-executions): no polling.
  const list = useLiveList(client, "executions", filters, () => client.executions.list({ ...filters, limit: 50 }), [
    client,
    filterKey,
  ]);
  const actions = usePoll(
    () => client.contracts.list(),
    [client],
    0,
    () => false,
  );
  const filtered = Object.keys(filters).length > 0;
  return (
    <main>
      <h1>Executions</h1>
      <FilterForm
        key={filterKey}
        filters={filters}
        actionNames={actions.data?.map((a) => a.name) ?? []}
        byCaller={props.byCaller}
      />
      <LoadFailure loaded={list} />
      <p class="hint">Live: new and changed executions appear as they happen.</p>
      <ScrollBox label="Executions, scrolled">
        <table aria-label="Executions">
          <thead>
            <tr>
              <th scope="col">Action</th>
              <th scope="col">Status</th>
              <th scope="col">Caller</th>
              <th scope="col">Created</th>
              <th scope="col" class="num">
                Took
              </th>
              <th scope="col">Id</th>
            </tr>
          </thead>
          <tbody>
            {list.data?.items.map((e) => (
              <tr key={e.id}>
                <td>{e.action}</td>
                <td>
                  <StatusBadge status={e.status} />
                </td>
                <td>
                  {e.principal.kind}:{e.principal.id}
                </td>
                <td>
                  <When at={e.createdAt} />
                </td>
                <td class="num">{durationOf(e.startedAt, e.finishedAt)}</td>
                <td>
                  <ShortId id={e.id} href={hrefOf({ page: "executions", id: e.id })} label="Execution" />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollBox>
      {!list.data && !list.error && <LoadingState what="executions" />}
      {list.data?.items.length === 0 &&
        (filtered ? (
          <EmptyState title="No execution matches these filters.">Clear them to see every execution.</EmptyState>
        ) : (
          <EmptyState title="No executions yet.">Run an action from the Actions page and it is listed here.</EmptyState>
        ))}
    </main>
  );
}

/** `datetime-local` speaks local time without a zone; the hash and the API speak ISO instants. */
const localInput = (iso: string | undefined) => {
  if (!iso || Number.isNaN(Date.parse(iso))) return "";
  const at = new Date(iso);
  return new Date(at.getTime() - at.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};
const instant = (local: string) => (local ? new Date(local).toISOString() : undefined);

/** Applying the filters changes the hash: the view can be reloaded, bookmarked or shared as it is. */
function FilterForm(props: { filters: ExecutionFilters; actionNames: string[]; byCaller: boolean }) {
  const { filters } = props;
  const apply = (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const text = (name: string) => String(form.get(name) ?? "").trim() || undefined;
    location.hash = hrefOf({
      page: "executions",
      filters: {
        action: text("action"),
        status: text("status"),
        caller: text("caller"),
        since: instant(String(form.get("since") ?? "")),
        until: instant(String(form.get("until") ?? "")),
      },
    });
  };
  return (
    <form class="filters" onSubmit={apply} aria-label="Filters">
      <div>
        <label for="filter-action">Action</label>
        <input id="filter-action" name="action" type="text" list="action-names" defaultValue={filters.action} />
        <datalist id="action-names">
          {props.actionNames.map((name) => (
            <option key={name} value={name} />
          ))}
        </datalist>
      </div>
      <div>
        <label for="filter-status">Status</label>
        <select id="filter-status" name="status" defaultValue={filters.status ?? ""}>
          <option value="">any</option>
          {EXECUTION_STATUSES.map((s) => (
            // `selected`: a select's defaultValue is set before its options exist, so it would show "any".
            <option key={s} value={s} selected={filters.status === s}>
              {s}
            </option>
          ))}
        </select>
      </div>
      {props.byCaller && (
        <div>
          <label for="filter-caller">Caller</label>
          <input id="filter-caller" name="caller" type="text" placeholder="user:alice" defaultValue={filters.caller} />
        </div>
      )}
      <div>
        <label for="filter-since">Since</label>
        <input id="filter-since" name="since" type="datetime-local" defaultValue={localInput(filters.since)} />
      </div>
      <div>
        <label for="filter-until">Until</label>
        <input id="filter-until" name="until" type="datetime-local" defaultValue={localInput(filters.until)} />
      </div>
      <p>
        {/* Its name says what it applies; its face stays short, so the filters keep one line at 1024 px. */}
        <button type="submit" aria-label="Apply filters">
          Apply
        </button>{" "}
        <a href={hrefOf({ page: "executions" })} class="button-link">
          Clear
        </a>
      </p>
    </form>
  );
}
