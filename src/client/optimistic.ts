import { keyOf, type LiveConnection } from "./live.ts";
import type { OptimisticStore } from "./types.ts";

type Result = Record<string, unknown[]>;
type Listener = (result: Result) => void;

/** What `subscribe` takes after the query and the listener (its error path), passed through as it is. */
export type SubscribeRest =
  Parameters<LiveConnection["subscribe"]> extends [unknown, unknown, ...infer Rest] ? Rest : never;

/** How long a succeeded call's update stays when no server result for a query it changed comes (the write changed none). */
export const SETTLE_MS = 1_000;

interface Pending {
  run: (store: OptimisticStore) => void;
  /** The queries the update set, by key, when it last ran. */
  touched: Set<string>;
  /** A query it set got a new server result since the update began (the server sends only results that changed). */
  refreshed?: boolean;
  answered?: boolean;
}

/**
 * The local layer between the session socket's results and the subscribers: each query shows its
 * server result with every pending optimistic update applied on top, in call order. Updates run
 * again on each new server result, so a refresh during a call does not erase them. A failed call's
 * update goes at once. A succeeded call's goes once a query it changed got a new server result, which
 * likely holds the write: at the answer when one came during the call (the write's refresh often
 * comes before the answer; keeping the update then would show the row twice), else at the first after
 * the answer, else after SETTLE_MS. Results carry no transaction ids to be sure.
 */
export function optimisticLayer(
  subscribe: (query: Record<string, unknown>, listener: Listener, ...rest: SubscribeRest) => () => void,
) {
  const server = new Map<string, Result>();
  const listeners = new Map<string, Set<Listener>>();
  let pending: Pending[] = [];
  let local = new Map<string, Result>();

  const view = (key: string) => local.get(key) ?? server.get(key);

  /** Applies the pending updates again and tells each query they change (or changed) but `skip`. */
  const recompute = (skip?: string) => {
    const before = local;
    local = new Map();
    for (const update of pending) {
      update.touched.clear();
      update.run({
        getQuery: (query) => view(keyOf(query)),
        setQuery: (query, result) => {
          const key = keyOf(query);
          local.set(key, result);
          update.touched.add(key);
        },
      });
    }
    for (const key of new Set([...before.keys(), ...local.keys()])) {
      const result = view(key);
      if (key !== skip && result) for (const listener of listeners.get(key) ?? []) listener(result);
    }
  };

  const drop = (update: Pending) => {
    if (!pending.includes(update)) return;
    pending = pending.filter((u) => u !== update);
    recompute();
  };

  return {
    subscribe(query: Record<string, unknown>, listener: Listener, ...rest: SubscribeRest): () => void {
      const key = keyOf(query);
      const own = listeners.get(key) ?? new Set();
      listeners.set(key, own);
      own.add(listener);
      const stop = subscribe(
        query,
        (result) => {
          // The socket calls each listener of a query with the same result: the first one takes it in.
          if (server.get(key) !== result) {
            server.set(key, result);
            for (const update of pending) if (update.touched.has(key)) update.refreshed = true;
            pending = pending.filter((u) => !(u.answered && u.refreshed));
            if (local.size > 0 || pending.length > 0) recompute(key);
          }
          listener(view(key) ?? result);
        },
        ...rest,
      );
      return () => {
        stop();
        own.delete(listener);
        if (own.size > 0) return;
        listeners.delete(key);
        server.delete(key);
      };
    },

    /** Applies `update` now; answers how to end it: `settle(true)` once the call succeeded, `settle(false)` on failure. */
    apply<Input>(update: (store: OptimisticStore, input: Input) => void, input: Input) {
      const entry: Pending = { run: (store) => update(store, input), touched: new Set() };
      pending.push(entry);
      try {
        recompute();
      } catch (error) {
        drop(entry);
        throw error;
      }
      return (succeeded: boolean) => {
        if (!succeeded) return drop(entry);
        entry.answered = true;
        if (entry.refreshed) drop(entry);
        else setTimeout(() => drop(entry), SETTLE_MS);
      };
    },
  };
}

export type OptimisticLayer = ReturnType<typeof optimisticLayer>;
