import { useCallback, useEffect, useRef, useState } from "react";
import type { ActuateError } from "./errors.ts";
import type { ActuateClient, ConnectionState, OptimisticStore } from "./index.ts";
import type { Checked, QueryClient, QueryOf, QueryResult } from "./query-types.ts";
import type { AnyRelease } from "./types.ts";

/** A live query's state: `undefined` until the first result (and always during server rendering). */
export interface QueryState<Result> {
  data: Result | undefined;
  /** Why the query was refused, or the token that was (the last data stays); the next data clears it. */
  error: ActuateError | undefined;
  /** Neither data nor an error yet. */
  isLoading: boolean;
  /** @deprecated `isLoading`; removed in the next release. */
  loading: boolean;
}

/**
 * The result of a live query, kept current: subscribes on mount (never during server rendering, so
 * the server's markup and the first client render agree), re-subscribes when the query changes,
 * unsubscribes on unmount. No suspense: `loading` says there is nothing yet.
 */
export function useQuery<Release, const Q extends QueryOf<Release>>(
  client: QueryClient<Release>,
  query: (Q & Checked<Release, Q>) | null,
): QueryState<QueryResult<Release, Q>>;
/** With the result's type written by hand (`useQuery<{ notes: Note[] }>(…)`): only when it is written. */
export function useQuery<Result extends Record<string, unknown[]> = never>(
  client: QueryClient<AnyRelease>,
  query: [Result] extends [never] ? never : Record<string, unknown> | null,
): QueryState<Result>;
export function useQuery<Result extends Record<string, unknown[]>>(
  client: QueryClient<AnyRelease>,
  query: Record<string, unknown> | null,
): QueryState<Result> {
  const [state, setState] = useState<{ data?: Result | undefined; error?: ActuateError | undefined }>({});
  // The query's text, so a new object with the same content does not subscribe again.
  const key = query === null ? null : JSON.stringify(query);
  useEffect(() => {
    if (key === null) return;
    setState({});
    return client.subscribe(
      JSON.parse(key),
      (result) => setState({ data: result as Result }),
      (error) => setState((s) => ({ data: s.data, error })),
    );
  }, [client, key]);
  const isLoading = key !== null && state.data === undefined && state.error === undefined;
  return { data: state.data, error: state.error, isLoading, loading: isLoading };
}

/** The state of the client's live connection, kept current (`closed` during server rendering). */
export function useConnectionState(client: Pick<ActuateClient, "onConnectionChange">): ConnectionState {
  const [state, setState] = useState<ConnectionState>("closed");
  useEffect(() => client.onConnectionChange(setState), [client]);
  return state;
}

export interface ActionState<Input, Output> {
  /** Runs the action; `files` for an action's file fields (as `client.actions[name](input, { files })`). */
  run: (input: Input, options?: { files?: Record<string, Blob> }) => Promise<Output>;
  data: Output | undefined;
  error: Error | undefined;
  running: boolean;
}

// Any arity: an action with file fields requires its options (the hook runs it with its input alone).
type Call = (...args: never[]) => Promise<unknown>;
type OutputOf<C extends Call> = Awaited<ReturnType<C>> extends { output: infer Output } ? Output : unknown;

export interface ActionOptions<Input> {
  /** Changes live queries' local results until the answer (see `InvokeOptions.optimistic`). */
  optimistic?: (store: OptimisticStore, input: Input) => void;
}

/**
 * Runs an action on demand and keeps its last output or error; a late answer after unmount is
 * dropped. `optimistic` is read when `run` is called, so an inline function does not change `run`.
 */
export function useAction<Actions extends Record<string, Call>, Name extends keyof Actions & string>(
  client: { actions: Actions },
  name: Name,
  options: ActionOptions<Parameters<Actions[Name]>[0]> = {},
): ActionState<Parameters<Actions[Name]>[0], OutputOf<Actions[Name]>> {
  type Output = OutputOf<Actions[Name]>;
  const [state, setState] = useState<{ data?: Output; error?: Error; running: boolean }>({ running: false });
  const optimistic = useRef(options.optimistic);
  optimistic.current = options.optimistic;
  const mounted = useRef(true);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);
  const run = useCallback(
    async (input: Parameters<Actions[Name]>[0], callOptions: { files?: Record<string, Blob> } = {}) => {
      setState((s) => ({ ...s, running: true }));
      try {
        const call = client.actions[name] as Actions[Name];
        const answer = (await call(input as never, { ...callOptions, optimistic: optimistic.current } as never)) as {
          output: Output;
        };
        if (mounted.current) setState({ data: answer.output, running: false });
        return answer.output;
      } catch (error) {
        if (mounted.current) setState({ error: error as Error, running: false });
        throw error;
      }
    },
    [client, name],
  );
  return { run, data: state.data, error: state.error, running: state.running };
}

export type PaginationStatus = "loading" | "canLoadMore" | "loadingMore" | "exhausted";

export interface PaginatedQueryState<Row> {
  /** The rows of the pages loaded so far, kept current. */
  results: Row[];
  status: PaginationStatus;
  /** Asks for one more page (when `status` is `canLoadMore`). */
  loadMore: () => void;
  error: Error | undefined;
  isLoading: boolean;
}

/** The rows a one-entity query answers. */
type RowOf<Release, Q> = QueryResult<Release, Q>[keyof QueryResult<Release, Q>] extends readonly (infer Row)[]
  ? Row
  : unknown;

/**
 * A live query read a page at a time: one subscription whose top-level `$.limit` grows by `pageSize`
 * per `loadMore()` (the query's own `$.offset`, `where` and `order` stay), asking one row more than it
 * shows to know whether more exist. The pages are one live result, so a row written or deleted while
 * paginated moves the others along: none twice, none lost. The server caps `limit` at 10,000.
 */
export function usePaginatedQuery<Release, const Q extends QueryOf<Release>>(
  client: QueryClient<Release>,
  query: Q & Checked<Release, Q>,
  options: { pageSize: number },
): PaginatedQueryState<RowOf<Release, Q>>;
/** With the row's type written by hand (`usePaginatedQuery<Note>(…)`): only when it is written. */
export function usePaginatedQuery<Row = never>(
  client: QueryClient<AnyRelease>,
  query: [Row] extends [never] ? never : Record<string, unknown>,
  options: { pageSize: number },
): PaginatedQueryState<Row>;
export function usePaginatedQuery<Row>(
  client: QueryClient<AnyRelease>,
  query: Record<string, unknown>,
  { pageSize }: { pageSize: number },
): PaginatedQueryState<Row> {
  const entities = Object.keys(query);
  if (entities.length !== 1) {
    throw new Error(`usePaginatedQuery reads one top-level entity; this query has ${entities.length}`);
  }
  const entity = entities[0] as string;
  if ((query[entity] as { $?: { limit?: number } } | undefined)?.$?.limit !== undefined) {
    throw new Error(`usePaginatedQuery sets ${entity}.$.limit itself (pageSize per page): leave it out`);
  }
  const key = JSON.stringify(query);
  // The pages asked for, per query: another query starts again at one page.
  const [asked, setAsked] = useState({ key, pages: 1 });
  const limit = (asked.key === key ? asked.pages : 1) * pageSize;
  const [shown, setShown] = useState<{ key: string; limit: number; rows?: Row[]; error?: Error }>({ key, limit });
  useEffect(() => {
    const [name, node] = Object.entries(JSON.parse(key))[0] as [string, { $?: object }];
    return client.subscribe(
      { [name]: { ...node, $: { ...node.$, limit: limit + 1 } } },
      (result) => setShown({ key, limit, rows: result[name] as Row[] }),
      (error) => setShown({ key, limit, error }),
    );
  }, [client, key, limit]);
  const rows = shown.key === key ? shown.rows : undefined;
  const status: PaginationStatus = !rows
    ? "loading"
    : shown.limit < limit
      ? "loadingMore"
      : rows.length > limit
        ? "canLoadMore"
        : "exhausted";
  const loadMore = useCallback(() => {
    if (status === "canLoadMore") setAsked({ key, pages: limit / pageSize + 1 });
  }, [status, key, limit, pageSize]);
  const error = shown.key === key ? shown.error : undefined;
  return {
    results: rows?.slice(0, shown.limit) ?? [],
    status,
    loadMore,
    error,
    isLoading: status === "loading" && !error,
  };
}
