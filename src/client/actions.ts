import type { ActionContract, ActionSummary, InvokeAnswer, ReleaseDescription } from "../wire/views.ts";
import type { executionsResource } from "./executions.ts";
import { settledOrThrow } from "./executions.ts";
import { request, retried, type Transport } from "./http.ts";
import type { OptimisticLayer } from "./optimistic.ts";
import type { ActionCall, InvokeOptions, ReleaseTypes, RunHandle } from "./types.ts";

/** JSON, or with files a form: the JSON as its `request` part and one part per file field. */
function invocationBody(requestId: string, input: unknown, files: Record<string, Blob> | undefined) {
  if (!files || Object.keys(files).length === 0) return { requestId, input };
  const form = new FormData();
  form.set("request", JSON.stringify({ requestId, input }));
  for (const [field, file] of Object.entries(files)) form.set(field, file);
  return form;
}

/** Invokes an action by name: a function's answer once it ended, a workflow's run as admitted. */
export const invoker = (
  transport: Transport,
  executions: ReturnType<typeof executionsResource>,
  optimistic: Pick<OptimisticLayer, "apply">,
) => {
  const answerOf = async (name: string, input: unknown, invokeOptions: InvokeOptions) => {
    const requestId = invokeOptions.requestId ?? crypto.randomUUID();
    const { status, body } = await request<InvokeAnswer>(
      transport,
      "POST",
      `/actions/${encodeURIComponent(name)}/invoke`,
      { body: invocationBody(requestId, input, invokeOptions.files), retry: true, signal: invokeOptions.signal },
    );
    if (body.kind === "workflow" && body.runId) {
      const runId = body.runId;
      return {
        runId,
        execution: body.execution,
        follow: () => executions.follow(runId),
        result: (o: { signal?: AbortSignal | undefined } = {}) => executions.result(runId, o),
      } satisfies RunHandle<unknown>;
    }
    // 202 for a function: it outlived the server's wait; its result follows.
    return status === 202
      ? executions.result(body.execution.id, { signal: invokeOptions.signal })
      : settledOrThrow(body.execution);
  };
  return async (name: string, input: unknown, invokeOptions: InvokeOptions = {}) => {
    // Before the first await, so that subscribers see the local result as the call starts.
    const settle = invokeOptions.optimistic && optimistic.apply(invokeOptions.optimistic, input);
    try {
      const answer = await answerOf(name, input, invokeOptions);
      settle?.(true);
      return answer;
    } catch (error) {
      settle?.(false);
      throw error;
    }
  };
};

/** `client.actions["math.add"](input)`: one typed call per action of the release. */
export const actionCalls = <Release extends ReleaseTypes>(invoke: ReturnType<typeof invoker>) =>
  new Proxy({} as { [Name in keyof Release["actions"]]: ActionCall<Release["actions"][Name]> }, {
    get: (_target, name) =>
      typeof name === "string" ? (input: unknown, o?: InvokeOptions) => invoke(name, input, o) : undefined,
  });

/** The active release's actions the caller may call, and their contracts (for names known at run time). */
export const contractsResource = (transport: Transport) => ({
  list: () => retried<{ items: ActionSummary[] }>(transport, "GET", "/actions").then((body) => body.items),
  get: (name: string) => retried<ActionContract>(transport, "GET", `/actions/${encodeURIComponent(name)}/contract`),
});

/** The active release as the caller may know it: its entities, links and the actions it may call. */
export const describer = (transport: Transport) => () => retried<ReleaseDescription>(transport, "GET", "/describe");
