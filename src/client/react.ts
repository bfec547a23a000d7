import { useCallback, useEffect, useRef, useState } from "react";
import type { ActuateError } from "./errors.ts";
import type { ActuateClient, ConnectionState } from "./index.ts";

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
export function useQuery<Result extends Record<string, unknown[]> = Record<string, unknown[]>>(
  client: Pick<ActuateClient, "subscribe">,
  query: Record<string, unknown> | null,
): QueryState<Result> {
  const [state, setState] = useState<{ data?: Result; error?: ActuateError }>({});
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
  run: (input: Input) => Promise<Output>;
  data: Output | undefined;
  error: Error | undefined;
  running: boolean;
}

type Call = (input: never) => Promise<unknown>;
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
