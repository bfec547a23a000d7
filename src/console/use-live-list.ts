import { useEffect, useRef, useState } from "preact/hooks";
import type { ActuateClient } from "../client/index.ts";
import type { Page } from "../wire/views.ts";
import { merged, type Pushes, type Row, withPush } from "./live-list.ts";
import { type Polled, usePoll } from "./use-poll.ts";

/** The filters a live list takes, of those a list page has: `since`/`until` are applied here, to new rows. */
const LIVE_FILTERS = { executions: ["action", "status", "caller"], runs: ["workflow", "status"] } as const;

/** How often at most a live refresh (`useRefreshOnExecutions`) reads again. */
const REFRESH_EVERY_MS = 1_000;

const pick = (filters: Record<string, string | undefined>, names: readonly string[]) =>
  Object.fromEntries(names.flatMap((name) => (filters[name] ? [[name, filters[name] as string]] : [])));

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
