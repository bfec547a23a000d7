import { useCallback, useEffect, useRef, useState } from "react";
import type { Checked, QueryClient, QueryOf, QueryResult } from "./query-types.ts";
import type { AnyRelease } from "./types.ts";

/** A live query's state: `undefined` until the first result (and always during server rendering). */
export interface QueryState<Result> {
  data: Result | undefined;
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
  const [data, setData] = useState<Result | undefined>(undefined);
  // The query's text, so a new object with the same content does not subscribe again.
  const key = query === null ? null : JSON.stringify(query);
  useEffect(() => {
    if (key === null) return;
    setData(undefined);
    return client.subscribe(JSON.parse(key), (result) => setData(result as Result));
  }, [client, key]);
  return { data, loading: key !== null && data === undefined };
}

export interface ActionState<Input, Output> {
  run: (input: Input) => Promise<Output>;
  data: Output | undefined;
  error: Error | undefined;
  running: boolean;
}

// Any arity: an action with file fields requires its options (the hook runs it with its input alone).
type Call = (...args: never[]) => Promise<unknown>;
type OutputOf<C extends Call> = Awaited<ReturnType<C>> extends { output: infer Output } ? Output : unknown;

/** Runs an action on demand and keeps its last output or error; a late answer after unmount is dropped. */
export function useAction<Actions extends Record<string, Call>, Name extends keyof Actions & string>(
  client: { actions: Actions },
  name: Name,
): ActionState<Parameters<Actions[Name]>[0], OutputOf<Actions[Name]>> {
  type Output = OutputOf<Actions[Name]>;
  const [state, setState] = useState<{ data?: Output; error?: Error; running: boolean }>({ running: false });
  const mounted = useRef(true);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);
  const run = useCallback(
    async (input: Parameters<Actions[Name]>[0]) => {
      setState((s) => ({ ...s, running: true }));
      try {
        const call = client.actions[name] as Actions[Name];
        const answer = (await call(input as never)) as { output: Output };
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
