import { useEffect, useState } from "preact/hooks";
import type { ActuateClient, Execution, LogLine } from "../client/index.ts";
import type { Loaded } from "./use-poll.ts";

export interface FollowedExecution {
  execution: Execution;
  logs: LogLine[];
}

/**
 * An execution and its lines, read now and again whenever the session socket's stream for it says
 * something happened (a status, a line, the end): live while it runs, with no reads while nothing
 * does. One read at a time; events arriving during a read make one more read after it.
 */
export function useFollowedExecution(client: ActuateClient, id: string): Loaded<FollowedExecution> {
  const [state, setState] = useState<Loaded<FollowedExecution>>({ data: null, error: null });
  useEffect(() => {
    let stopped = false;
    let reading: Promise<FollowedExecution | null> | null = null;
    let readAgain = false;
    const readOnce = async (): Promise<FollowedExecution | null> => {
      try {
        const detail = { execution: await client.executions.get(id), logs: await allLogs(client, id) };
        if (!stopped) setState({ data: detail, error: null });
        return detail;
      } catch (error) {
        if (!stopped) setState((s) => ({ data: s.data, error: (error as Error).message }));
        return null;
      }
    };
    const read = (): Promise<FollowedExecution | null> => {
      if (reading) {
        readAgain = true;
        return reading;
      }
      reading = (async () => {
        let detail = await readOnce();
        while (readAgain && !stopped) {
          readAgain = false;
          detail = await readOnce();
        }
        reading = null;
        return detail;
      })();
      return reading;
    };
    let stream: AsyncIterator<unknown> | null = null;
    (async () => {
      const first = await read();
      if (stopped || !first || first.execution.finishedAt !== null) return;
      // The stream's first event is the status when it was subscribed, so nothing since the read is missed.
      stream = client.executions.follow(id)[Symbol.asyncIterator]();
      for (let event = await stream.next(); !event.done && !stopped; event = await stream.next()) {
        const detail = await read();
        if (detail?.execution.finishedAt) break;
      }
      stream.return?.();
    })();
    return () => {
      stopped = true;
      stream?.return?.();
    };
  }, [client, id]);
  return state;
}

/** Every line so far: pages until the cursor runs out, or stays on the same page while it runs. */
async function allLogs(client: ActuateClient, id: string): Promise<LogLine[]> {
  const lines: LogLine[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await client.executions.logs(id, { cursor });
    lines.push(...page.items);
    if (!page.nextCursor || page.items.length === 0) return lines;
    cursor = page.nextCursor;
  }
}
