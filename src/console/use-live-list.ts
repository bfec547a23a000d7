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

/** What a live list was pushed that its page does not show yet: changed and new rows, newest push first, and rows gone. */
export interface Pushes<T extends Row> {
  rows: T[];
  /** Rows that left the list (a status the filter leaves out). */
  left: Set<string>;
}

/**
 * The pushes with one more applied. Once the page is read, only what can still show is kept (its own
 * rows' latest states, the newest SHOWN new rows, its rows gone): a list left open for days keeps no more.
 */
export function withPush<T extends Row>(
  pushes: Pushes<T>,
  items: T[],
  gone: string[],
  page: Page<T> | undefined,
  filters: Record<string, string | undefined>,
): Pushes<T> {
  const changed = new Set([...items.map((row) => row.id), ...gone]);
  const rows = [...items, ...pushes.rows.filter((row) => !changed.has(row.id))];
  const left = new Set([...pushes.left, ...gone]);
  for (const row of items) left.delete(row.id);
  if (!page) return { rows, left };
  const onPage = new Set(page.items.map((row) => row.id));
  let added = 0;
  return {
    rows: rows.filter((row) => onPage.has(row.id) || (within(row, filters) && added++ < SHOWN)),
    left: new Set([...left].filter((id) => onPage.has(id))),
  };
}

/**
 * Changed rows replace theirs where they are; rows the page lacks go on top (newest first), when they fit
 * the page; rows that left the list go.
 */
export function merged<T extends Row>(
  page: Page<T>,
  pushes: Pushes<T>,
  filters: Record<string, string | undefined>,
): Page<T> {
  const byId = new Map(pushes.rows.map((row) => [row.id, row]));
  const items = page.items.filter((row) => !pushes.left.has(row.id)).map((row) => byId.get(row.id) ?? row);
  const listed = new Set(items.map((row) => row.id));
  const added = pushes.rows.filter((row) => !listed.has(row.id) && within(row, filters));
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
  const none = (): Pushes<T> => ({ rows: [], left: new Set() });
  const pushes = useRef(none());
  const page = useRef<Page<T> | undefined>(undefined);
  const [, setPushes] = useState(0);
  const filterKey = JSON.stringify(filters);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the list is the filters' (filterKey) and the client's
  useEffect(() => {
    pushes.current = none();
    const live = pick(filters, LIVE_FILTERS[kind]);
    const apply = (items: unknown[], gone: string[]) => {
      pushes.current = withPush(pushes.current, items as T[], gone, page.current, filters);
      setPushes((n) => n + 1);
    };
    return kind === "runs" ? client.runs.subscribe(live as object, apply) : client.executions.subscribe(live, apply);
  }, [client, kind, filterKey]);
  const polled = usePoll(load, deps, 0, () => false);
  page.current = polled.data ?? undefined;
  const changed = pushes.current.rows.length > 0 || pushes.current.left.size > 0;
  const data = polled.data && changed ? merged(polled.data, pushes.current, filters) : polled.data;
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
