import { useEffect, useRef, useState } from "preact/hooks";
import type { ActuateClient } from "../client/index.ts";
import type { Page } from "../wire/views.ts";
import { type Polled, usePoll } from "./use-poll.ts";

type Row = { id: string; createdAt: string };

/** The filters a live list takes, of those a list page has: `since`/`until` are applied here, to new rows. */
const LIVE_FILTERS = { executions: ["action", "status", "caller"], runs: ["workflow", "status"] } as const;

/** Rows a live list shows at least (the pages read 50). */
const SHOWN = 50;

/** How often at most a live refresh (`useRefreshOnExecutions`) reads again. */
const REFRESH_EVERY_MS = 1_000;

const pick = (filters: Record<string, string | undefined>, names: readonly string[]) =>
  Object.fromEntries(names.flatMap((name) => (filters[name] ? [[name, filters[name] as string]] : [])));

const within = (row: Row, filters: Record<string, string | undefined>) =>
  (!filters.since || row.createdAt >= new Date(filters.since).toISOString()) &&
  (!filters.until || row.createdAt < new Date(filters.until).toISOString());

/**
 * Changed rows replace theirs where they are; rows the page lacks go on top (newest first), when they fit
 * the page; rows that left the list (a status the filter leaves out) go.
 */
function merged<T extends Row>(
  page: Page<T>,
  pushed: T[],
  left: Set<string>,
  filters: Record<string, string | undefined>,
): Page<T> {
  const byId = new Map(pushed.map((row) => [row.id, row]));
  const items = page.items.filter((row) => !left.has(row.id)).map((row) => byId.get(row.id) ?? row);
  const listed = new Set(items.map((row) => row.id));
  const added = pushed.filter((row) => !listed.has(row.id) && within(row, filters));
  // A list left open keeps its length: the oldest rows make room for the new.
  return { ...page, items: [...added, ...items].slice(0, Math.max(page.items.length, SHOWN)) };
}

/**
 * The first page of the executions (or runs) list, read once and then kept current by the session
 * socket (`client.executions.subscribe`): no polling. The live list is subscribed before the page is
 * read, and what it pushes meanwhile is applied to the page once read, so nothing in between is lost.
 */
export function useLiveList<T extends Row>(
  client: ActuateClient,
  kind: "executions" | "runs",
  filters: Record<string, string | undefined>,
  load: () => Promise<Page<T>>,
  deps: unknown[],
): Polled<Page<T>> {
  const pushed = useRef<T[]>([]);
  const left = useRef(new Set<string>());
  const [, setPushes] = useState(0);
  const filterKey = JSON.stringify(filters);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the list is the filters' (filterKey) and the client's
  useEffect(() => {
    pushed.current = [];
    left.current = new Set();
    const live = pick(filters, LIVE_FILTERS[kind]);
    const apply = (items: unknown[], gone: string[]) => {
      const changed = new Set([...(items as T[]).map((row) => row.id), ...gone]);
      pushed.current = [...(items as T[]), ...pushed.current.filter((row) => !changed.has(row.id))];
      for (const id of gone) left.current.add(id);
      for (const row of items as T[]) left.current.delete(row.id);
      setPushes((n) => n + 1);
    };
    return kind === "runs" ? client.runs.subscribe(live as object, apply) : client.executions.subscribe(live, apply);
  }, [client, kind, filterKey]);
  const polled = usePoll(load, deps, 0, () => false);
  const changed = pushed.current.length > 0 || left.current.size > 0;
  const data = polled.data && changed ? merged(polled.data, pushed.current, left.current, filters) : polled.data;
  return { ...polled, data };
}

/**
 * Calls `refresh` when an execution the caller may see is new or changed, at most once a second (the
 * last change of a burst is never left out): the overview's figures move as work happens.
 */
export function useRefreshOnExecutions(client: ActuateClient, refresh: () => void): void {
  const latest = useRef(refresh);
  latest.current = refresh;
  useEffect(() => {
    let last = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stop = client.executions.subscribe({}, () => {
      if (timer) return;
      const wait = Math.max(0, last + REFRESH_EVERY_MS - Date.now());
      timer = setTimeout(() => {
        timer = undefined;
        last = Date.now();
        latest.current();
      }, wait);
    });
    return () => {
      stop();
      clearTimeout(timer);
    };
  }, [client]);
}
