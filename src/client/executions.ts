import type { Execution, LogLine, Page } from "../wire/views.ts";
import { ActuateError } from "./errors.ts";
import { request, retried, searchOf, type Transport } from "./http.ts";
import type { LiveConnection, LiveSession, StreamEvent } from "./live.ts";
import type { Invocation } from "./types.ts";

export const settledOrThrow = <Output>(execution: Execution<Output>): Invocation<Output> => {
  if (execution.status === "succeeded") return { output: execution.output as Output, execution };
  throw new ActuateError(
    execution.errorCode ?? execution.status,
    execution.errorMessage ?? `the execution ${execution.status}`,
    200,
    { executionId: execution.id, requestId: execution.requestId },
  );
};

/** `/result` until it answers: it waits up to the server's WAIT_MS and answers 504 when the execution has not ended. */
async function ended<Output>(transport: Transport, id: string, signal?: AbortSignal): Promise<Execution<Output>> {
  for (;;) {
    try {
      const { body } = await request<Execution<Output>>(transport, "GET", `/executions/${id}/result`, {
        retry: true,
        signal,
      });
      return body;
    } catch (error) {
      if (!(error instanceof ActuateError && error.code === "execution_result_timeout")) throw error;
    }
  }
}

/** Without a WebSocket (Node 20 without one given): the end alone, through the long-polled `/result`. */
async function* followByResult(transport: Transport, executionId: string): AsyncGenerator<StreamEvent> {
  const execution = await ended(transport, executionId);
  yield { status: execution.status, done: true, errorCode: execution.errorCode ?? null };
}

/** Status changes and log lines over the session socket, until the end. */
const followBySocket = (live: () => LiveConnection, executionId: string): AsyncIterable<StreamEvent> => ({
  [Symbol.asyncIterator]() {
    const queue: StreamEvent[] = [];
    let wake: (() => void) | null = null;
    let ended = false;
    const stop = live().stream(executionId, (event) => {
      queue.push(event);
      wake?.();
    });
    return {
      async next(): Promise<IteratorResult<StreamEvent>> {
        while (queue.length === 0 && !ended) await new Promise<void>((resolve) => (wake = resolve));
        const event = queue.shift();
        if (!event) return { done: true, value: undefined };
        if (event.done) {
          ended = true;
          stop();
        }
        return { done: false, value: event };
      },
      async return(): Promise<IteratorResult<StreamEvent>> {
        ended = true;
        stop();
        return { done: true, value: undefined };
      },
    };
  },
});

/** `client.executions`: reads, the long-polled result, and the live stream where a WebSocket exists. */
export function executionsResource(transport: Transport, live: LiveSession) {
  const result = async <Output = unknown>(
    id: string,
    o: { signal?: AbortSignal | undefined } = {},
  ): Promise<Invocation<Output>> => settledOrThrow(await ended<Output>(transport, id, o.signal));
  const follow = (executionId: string): AsyncIterable<StreamEvent> =>
    live.available() ? followBySocket(live.connection, executionId) : followByResult(transport, executionId);
  return {
    get: (id: string, o: { signal?: AbortSignal | undefined } = {}) =>
      retried<Execution>(transport, "GET", `/executions/${id}`, undefined, o.signal),
    list: (
      filter: {
        action?: string;
        status?: string;
        /** ISO instants; and, for a service key, `<kind>:<id>` of the caller. */
        since?: string;
        until?: string;
        caller?: string;
        limit?: number;
        cursor?: string;
      } = {},
      o: { signal?: AbortSignal | undefined } = {},
    ) => retried<Page<Execution>>(transport, "GET", `/executions${searchOf(filter)}`, undefined, o.signal),
    /** The caller's execution made with this request id (`GET /executions/requests/{requestId}`). */
    byRequest: (requestId: string, o: { signal?: AbortSignal | undefined } = {}) =>
      retried<Execution>(
        transport,
        "GET",
        `/executions/requests/${encodeURIComponent(requestId)}`,
        undefined,
        o.signal,
      ),
    result,
    /** The lines the execution logged; `nextCursor` stays non-null while it runs. */
    logs: (
      id: string,
      filter: { limit?: number; cursor?: string } = {},
      o: { signal?: AbortSignal | undefined } = {},
    ) => retried<Page<LogLine>>(transport, "GET", `/executions/${id}/logs${searchOf(filter)}`, undefined, o.signal),
    follow,
    /**
     * Each new or changed execution the caller may see (as `list` shows it) as it happens, and with a `status`
     * filter the ids of those that moved to another status (`left`); answers how to stop.
     */
    subscribe: (
      filter: { action?: string; status?: string; caller?: string },
      onChange: (executions: Execution[], left: string[]) => void,
      onError?: (error: ActuateError) => void,
    ) =>
      live
        .connection()
        .watchList("executions", filter, onChange as (items: unknown[], left: string[]) => void, onError),
  };
}
