import { ActuateError } from "./errors.ts";
import { type Fetch, request, type TokenSource, type Transport, tokenGetter } from "./http.ts";
import { type ConnectionState, LiveConnection, type StreamEvent } from "./live.ts";

export { ActuateError, type Issue } from "./errors.ts";
export type { ConnectionState, StreamEvent } from "./live.ts";

/**
 * What a client knows of a release: its actions' input and output types and its entities (written by
 * hand, or generated). Without one, every action takes and answers `unknown`.
 */
export interface ReleaseTypes {
  actions: Record<string, { input: unknown; output: unknown; kind?: "function" | "workflow" }>;
  entities?: Record<string, unknown>;
}

type AnyRelease = { actions: Record<string, { input: unknown; output: unknown }>; entities: Record<string, unknown> };

export interface Execution<Output = unknown> {
  id: string;
  requestId: string;
  action: string;
  kind: "function" | "workflow";
  status: "queued" | "running" | "succeeded" | "failed" | "canceled";
  input?: unknown;
  output?: Output;
  errorCode?: string;
  errorMessage?: string;
  principal: { kind: "user" | "service"; id: string };
  /** The files it was invoked with, stored at `executions/<id>/<field>/<filename>`. */
  uploads?: Upload[];
  releaseVersion: string;
  contractHash: string;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface Upload {
  field: string;
  path: string;
  filename: string;
  contentType: string;
  size: number;
}

/** A stored file, as `files.list` answers it; `size` is null while a signed upload is not yet seen. */
export interface StoredFile {
  path: string;
  contentType: string;
  size: number | null;
  sha256: string | null;
  owner: { kind: "user" | "service"; id: string };
  createdAt: string;
  updatedAt: string;
}

/** An entity attribute as the release describes it. */
export interface AttributeSchema {
  type: string;
  optional: boolean;
  indexed: boolean;
  unique: boolean;
}

export interface LinkEnd {
  on: string;
  has: "one" | "many";
  label: string;
}

/** The active release as the caller may know it (`GET /describe`). */
export interface ReleaseDescription {
  handle: string;
  release: { version: string; description?: string } | null;
  entities: Record<string, Record<string, AttributeSchema>>;
  links: Record<string, { forward: LinkEnd; reverse: LinkEnd }>;
  actions: ActionContract[];
}

export interface LogLine {
  seq: number;
  at: string;
  level: "info" | "warn" | "error";
  step: string | null;
  line: string;
}

export interface ActionSummary {
  name: string;
  kind: "function" | "workflow";
  description: string;
  contractHash: string;
  access: "authenticated" | "service" | "rule";
}

export interface ActionContract extends ActionSummary {
  /** JSON Schemas. */
  input: Record<string, unknown>;
  output: Record<string, unknown>;
  files: { field: string; required: boolean; maxBytes: number | null; contentTypes: string[] }[];
}

export interface PublishedRelease {
  version: string;
  bundleHash: string;
  publishedAt: string;
  /** Who published it, as the publisher named itself (`--by`, else user@host); null when not said. */
  publishedBy: string | null;
  active: boolean;
  activatedAt: string | null;
}

export type RunStatus = "queued" | "running" | "sleeping" | "succeeded" | "failed" | "canceled";

/** A workflow run as `GET /runs` lists it (values over 4 KiB left out, with their size). */
export interface RunSummary {
  id: string;
  executionId: string;
  workflow: string;
  releaseVersion: string;
  status: RunStatus;
  cancelRequested: boolean;
  input?: unknown;
  output?: unknown;
  errorCode: string | null;
  errorMessage?: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
}

export interface RunStep {
  name: string;
  kind: "step" | "sleep";
  status: "running" | "retrying" | "sleeping" | "succeeded" | "failed" | "canceled";
  attempts: number;
  output: unknown;
  error: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  /** When a sleeping step ends, or a retrying one tries again. */
  wakeAt: string | null;
  logs: Omit<LogLine, "step">[];
}

/** A workflow run with its steps (`GET /runs/{id}`). */
export interface Run extends RunSummary {
  logs: Omit<LogLine, "step">[];
  steps: RunStep[];
}

/** `GET /stats` (service keys): an overview of the environment over a window. */
export interface EnvironmentStats {
  window: { since: string; until: string };
  executions: Record<Execution["status"], number>;
  runs: Record<RunStatus, number>;
  failingActions: { action: string; failed: number }[];
  activeRuns: { queued: number; running: number; sleeping: number };
  liveSockets: number;
}

/** An app a person signed in to through the built-in sign-in (`GET /sign-ins`). */
export interface SignIn {
  id: string;
  user: string;
  client: { id: string; name: string };
  signedInAt: string;
  /** When the app last refreshed its tokens; null when it never did. */
  lastRefreshAt: string | null;
  expiresAt: string | null;
}

/** A release as published: its actions' contracts, whoever may call them. */
export interface ReleaseContracts extends PublishedRelease {
  description: string | null;
  actions: ActionContract[];
}

export interface InvokeOptions {
  /** The idempotency key; one is drawn per call when absent, and reused on every retry of that call. */
  requestId?: string;
  signal?: AbortSignal;
  /** The action's file inputs by field (sent as multipart/form-data with the JSON input beside them). */
  files?: Record<string, Blob>;
}

/** An action's answer once it ended: a failed handler is an ActuateError (`action_failed`, …). */
export interface Invocation<Output> {
  output: Output;
  execution: Execution<Output>;
}

/** A workflow's run, as admitted: follow it, or wait for its result. */
export interface RunHandle<Output> {
  runId: string;
  execution: Execution<Output>;
  /** Status changes, log lines, then the end (over the session socket). */
  follow(): AsyncIterable<StreamEvent>;
  /** The run's output once it ended; a failed or canceled run is an ActuateError. */
  result(options?: { signal?: AbortSignal }): Promise<Invocation<Output>>;
}

type ActionCall<A extends { input: unknown; output: unknown; kind?: string }> = A extends { kind: "workflow" }
  ? (input: A["input"], options?: InvokeOptions) => Promise<RunHandle<A["output"]>>
  : (input: A["input"], options?: InvokeOptions) => Promise<Invocation<A["output"]>>;

export interface ClientOptions {
  /** The environment's base URL (PUBLIC_URL). */
  url: string;
  /** A key or user token, or a function that answers a fresh one (called per request and per connection). */
  token: TokenSource;
  fetch?: Fetch;
  /** Where no global WebSocket exists (Node 20): the `ws` package's, say. */
  WebSocket?: typeof WebSocket;
  /** How often the live session takes a fresh token from `token` without reconnecting (default 5 min). */
  sessionReauthMs?: number;
}

interface InvokeAnswer {
  kind: "function" | "workflow";
  runId?: string;
  execution: Execution;
}

/** A live query's result: each top-level entity's rows, typed from the release's entities when it has them. */
export type QueryResult<Release extends ReleaseTypes, Query> = {
  [Entity in keyof Query]: Release["entities"] extends Record<string, unknown>
    ? Entity extends keyof Release["entities"]
      ? Release["entities"][Entity][]
      : unknown[]
    : unknown[];
};

const searchOf = (filter: Record<string, string | number | undefined>) => {
  const search = new URLSearchParams(
    Object.entries(filter)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]): [string, string] => [k, String(v)]),
  );
  return search.size > 0 ? `?${search}` : "";
};

/** JSON, or with files a form: the JSON as its `request` part and one part per file field. */
function invocationBody(requestId: string, input: unknown, files: Record<string, Blob> | undefined) {
  if (!files || Object.keys(files).length === 0) return { requestId, input };
  const form = new FormData();
  form.set("request", JSON.stringify({ requestId, input }));
  for (const [field, file] of Object.entries(files)) form.set(field, file);
  return form;
}

const settledOrThrow = <Output>(execution: Execution<Output>): Invocation<Output> => {
  if (execution.status === "succeeded") return { output: execution.output as Output, execution };
  throw new ActuateError(
    execution.errorCode ?? execution.status,
    execution.errorMessage ?? `the execution ${execution.status}`,
    200,
    { executionId: execution.id, requestId: execution.requestId },
  );
};

/** A client of one environment, for browsers, Bun, Node ≥ 20 and Deno: no Node-only API. */
export function createClient<Release extends ReleaseTypes = AnyRelease>(options: ClientOptions) {
  const transport: Transport = {
    url: options.url.replace(/\/+$/, ""),
    token: tokenGetter(options.token),
    fetch: options.fetch ?? ((input, init) => fetch(input, init)),
  };
  let live: LiveConnection | null = null;
  const connection = () => {
    live ??= new LiveConnection(
      transport.url,
      transport.token,
      options.WebSocket ?? globalThis.WebSocket,
      options.sessionReauthMs ?? 5 * 60_000,
    );
    return live;
  };

  const result = async <Output>(id: string, signal?: AbortSignal): Promise<Invocation<Output>> => {
    // /result waits up to the server's WAIT_MS and answers 504 when the execution has not ended: ask again.
    for (;;) {
      try {
        const { body } = await request<Execution<Output>>(transport, "GET", `/executions/${id}/result`, {
          retry: true,
          signal,
        });
        return settledOrThrow(body);
      } catch (error) {
        if (!(error instanceof ActuateError && error.code === "execution_result_timeout")) throw error;
      }
    }
  };

  /** Without a WebSocket (Node 20 without one given): the end alone, through the long-polled `/result`. */
  const followByResult = async function* (executionId: string): AsyncGenerator<StreamEvent> {
    for (;;) {
      try {
        const { body } = await request<Execution>(transport, "GET", `/executions/${executionId}/result`, {
          retry: true,
        });
        yield { status: body.status, done: true, errorCode: body.errorCode ?? null };
        return;
      } catch (error) {
        if (!(error instanceof ActuateError && error.code === "execution_result_timeout")) throw error;
      }
    }
  };

  const follow = (executionId: string): AsyncIterable<StreamEvent> =>
    (options.WebSocket ?? globalThis.WebSocket) === undefined
      ? followByResult(executionId)
      : followBySocket(executionId);

  const followBySocket = (executionId: string): AsyncIterable<StreamEvent> => ({
    [Symbol.asyncIterator]() {
      const queue: StreamEvent[] = [];
      let wake: (() => void) | null = null;
      let ended = false;
      const stop = connection().stream(executionId, (event) => {
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

  const invoke = async (name: string, input: unknown, invokeOptions: InvokeOptions = {}) => {
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
        follow: () => follow(runId),
        result: (o: { signal?: AbortSignal } = {}) => result(runId, o.signal),
      } satisfies RunHandle<unknown>;
    }
    // 202 for a function: it outlived the server's wait; its result follows.
    return status === 202 ? result(body.execution.id, invokeOptions.signal) : settledOrThrow(body.execution);
  };

  const actions = new Proxy({} as { [Name in keyof Release["actions"]]: ActionCall<Release["actions"][Name]> }, {
    get: (_target, name) =>
      typeof name === "string" ? (input: unknown, o?: InvokeOptions) => invoke(name, input, o) : undefined,
  });

  const query = (q: Record<string, unknown>, queryOptions: { format?: "objects" | "triples" } = {}) =>
    request<Record<string, unknown>>(transport, "POST", `/query?format=${queryOptions.format ?? "objects"}`, {
      body: { query: q },
      retry: true,
    }).then((r) => r.body);

  return {
    actions,
    /** Invokes an action by name (for names known only at run time). */
    invoke,
    query,
    /** Calls `listener` with the query's result now and after every change that alters it; answers how to stop. */
    subscribe: <Query extends Record<string, unknown>>(
      query: Query,
      listener: (result: QueryResult<Release, Query>) => void,
    ) => connection().subscribe(query, listener as (result: Record<string, unknown[]>) => void),
    onConnectionChange: (listener: (state: ConnectionState) => void) => connection().onConnectionChange(listener),
    executions: {
      get: (id: string) =>
        request<Execution>(transport, "GET", `/executions/${id}`, { retry: true }).then((r) => r.body),
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
      ) => {
        return request<{ items: Execution[]; nextCursor: string | null }>(
          transport,
          "GET",
          `/executions${searchOf(filter)}`,
          { retry: true },
        ).then((r) => r.body);
      },
      result: <Output = unknown>(id: string, o: { signal?: AbortSignal } = {}) => result<Output>(id, o.signal),
      /** The lines the execution logged; `nextCursor` stays non-null while it runs. */
      logs: (id: string, filter: { limit?: number; cursor?: string } = {}) =>
        request<{ items: LogLine[]; nextCursor: string | null }>(
          transport,
          "GET",
          `/executions/${id}/logs${searchOf(filter)}`,
          { retry: true },
        ).then((r) => r.body),
      follow,
    },
    /** The active release as the caller may know it: its entities, links and the actions it may call. */
    describe: () => request<ReleaseDescription>(transport, "GET", "/describe", { retry: true }).then((r) => r.body),
    /** The active release's actions the caller may call, and their contracts (for names known at run time). */
    contracts: {
      list: () =>
        request<{ items: ActionSummary[] }>(transport, "GET", "/actions", { retry: true }).then((r) => r.body.items),
      get: (name: string) =>
        request<ActionContract>(transport, "GET", `/actions/${encodeURIComponent(name)}/contract`, {
          retry: true,
        }).then((r) => r.body),
    },
    /** The release history and activation (service keys only). */
    releases: {
      list: (filter: { limit?: number; cursor?: string } = {}) =>
        request<{ items: PublishedRelease[]; nextCursor: string | null }>(
          transport,
          "GET",
          `/releases${searchOf(filter)}`,
          {
            retry: true,
          },
        ).then((r) => r.body),
      /** One published release with every action's contract, to compare two versions. */
      get: (version: string) =>
        request<ReleaseContracts>(transport, "GET", `/releases/${encodeURIComponent(version)}`, { retry: true }).then(
          (r) => r.body,
        ),
      activate: (version: string) =>
        request<Record<string, unknown>>(transport, "POST", `/releases/${encodeURIComponent(version)}/activate`).then(
          (r) => r.body,
        ),
    },
    runs: {
      list: (filter: { workflow?: string; status?: RunStatus; limit?: number; cursor?: string } = {}) =>
        request<{ items: RunSummary[]; nextCursor: string | null }>(transport, "GET", `/runs${searchOf(filter)}`, {
          retry: true,
        }).then((r) => r.body),
      get: (id: string) => request<Run>(transport, "GET", `/runs/${id}`, { retry: true }).then((r) => r.body),
      cancel: (id: string) =>
        request<Run>(transport, "POST", `/runs/${id}/cancel`, { retry: true }).then((r) => r.body),
    },
    /** An overview of the environment over `window` (`15m`, `1h`, at most `24h`; service keys only). */
    stats: (window = "1h") =>
      request<EnvironmentStats>(transport, "GET", `/stats${searchOf({ window })}`, { retry: true }).then((r) => r.body),
    /** The apps signed in as the caller through the built-in sign-in (a service key: one `user`'s, or everyone's). */
    signIns: {
      list: (filter: { user?: string } = {}) =>
        request<{ items: SignIn[] }>(transport, "GET", `/sign-ins${searchOf(filter)}`, { retry: true }).then(
          (r) => r.body.items,
        ),
      /** Ends one: the app's refresh tokens at once, its access tokens within the server's TOKEN_RECHECK_MS. */
      revoke: (id: string) =>
        request<SignIn>(transport, "DELETE", `/sign-ins/${encodeURIComponent(id)}`).then((r) => r.body),
    },
    files: {
      /** Uploads through a signed URL: the bytes go to the storage directly (the server signs, then is out of the way). */
      async upload(path: string, data: Blob, uploadOptions: { contentType?: string } = {}) {
        const contentType = uploadOptions.contentType ?? (data.type || "application/octet-stream");
        const { body } = await request<{ url: string; method?: string; headers?: Record<string, string> }>(
          transport,
          "POST",
          "/storage/signed-upload-url",
          { body: { path, contentType } },
        );
        const put = await transport.fetch(body.url, {
          method: body.method ?? "PUT",
          headers: body.headers ?? { "content-type": contentType },
          body: data,
        });
        if (!put.ok) throw new ActuateError("upload_failed", `the storage answered ${put.status}`, put.status);
        return put.json().catch(() => ({}));
      },
      /** The caller's files (every owner's for a service key) in path order, a page at a time. */
      list: (filter: { prefix?: string; limit?: number; cursor?: string } = {}) =>
        request<{ items: StoredFile[]; nextCursor: string | null }>(
          transport,
          "GET",
          `/storage/files${searchOf(filter)}`,
          { retry: true },
        ).then((r) => r.body),
      delete: (path: string) =>
        request<{ ok: true }>(transport, "DELETE", `/storage/files?filename=${encodeURIComponent(path)}`, {
          retry: true,
        }).then(() => undefined),
      downloadUrl: (path: string) =>
        request<{ url: string }>(
          transport,
          "GET",
          `/storage/signed-download-url?filename=${encodeURIComponent(path)}`,
          {
            retry: true,
          },
        ).then((r) => r.body.url),
    },
    /** Closes the session socket (live queries and streams end). */
    close: () => live?.close(),
  };
}

export type ActuateClient<Release extends ReleaseTypes = AnyRelease> = ReturnType<typeof createClient<Release>>;
