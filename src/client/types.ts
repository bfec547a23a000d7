import type { ActionKind } from "../wire/statuses.ts";
import type { Execution } from "../wire/views.ts";
import type { Fetch, TokenSource } from "./http.ts";
import type { StreamEvent, WebSocketClass } from "./live.ts";
import type { LinkType } from "./query-types.ts";

/**
 * What a client knows of a release: its actions' input, file fields and output types, its entities and
 * each entity's links (written by hand, or generated). Without one, every action takes and answers
 * `unknown`, and queries are loose.
 */
export interface ReleaseTypes {
  actions: Record<string, { input: unknown; output: unknown; kind?: ActionKind; files?: Record<string, Blob> }>;
  entities?: Record<string, unknown>;
  links?: Record<string, Record<string, LinkType>>;
}

export type AnyRelease = {
  actions: Record<string, { input: unknown; output: unknown }>;
  entities: Record<string, unknown>;
};

export interface InvokeOptions<Input = unknown> {
  /** The idempotency key; one is drawn per call when absent, and reused on every retry of that call. */
  requestId?: string | undefined;
  signal?: AbortSignal | undefined;
  /** The action's file inputs by field (sent as multipart/form-data with the JSON input beside them). */
  files?: Record<string, Blob>;
  /**
   * Changes the local results of live queries until the call's answer: run at once, and again on
   * every server result meanwhile. Dropped on failure; on success once a query it changed got a new
   * server result (at the answer if one came during the call, else the first after it, else after 1 s).
   * A workflow's ends at its admission.
   */
  optimistic?(store: OptimisticStore, input: Input): void;
}

/** The live queries' local results, as an optimistic update reads and replaces them. */
export interface OptimisticStore {
  /** The query's current local result (server's, with earlier updates applied); undefined when the client holds none. */
  getQuery(query: Record<string, unknown>): Record<string, unknown[]> | undefined;
  /** Replaces the query's local result: its subscribers see it at once. */
  setQuery(query: Record<string, unknown>, result: Record<string, unknown[]>): void;
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
  result(options?: { signal?: AbortSignal | undefined }): Promise<Invocation<Output>>;
}

/** An action's options: with file fields, `files` holds exactly those (and is required when one of them is). */
type CallOptions<A extends { input: unknown }> = A extends { files: infer Files }
  ? Record<never, never> extends Files
    ? [options?: Omit<InvokeOptions<A["input"]>, "files"> & { files?: Files }]
    : [options: Omit<InvokeOptions<A["input"]>, "files"> & { files: Files }]
  : [options?: InvokeOptions<A["input"]>];

export type ActionCall<A extends { input: unknown; output: unknown; kind?: string }> = A extends { kind: "workflow" }
  ? (input: A["input"], ...options: CallOptions<A>) => Promise<RunHandle<A["output"]>>
  : (input: A["input"], ...options: CallOptions<A>) => Promise<Invocation<A["output"]>>;

export interface ClientOptions {
  /** The environment's base URL (PUBLIC_URL). */
  url: string;
  /** A key or user token, or a function that answers a fresh one (called per request and per connection). */
  token: TokenSource;
  fetch?: Fetch;
  /** Where no global WebSocket exists (Node 20): the `ws` package's, say. */
  WebSocket?: WebSocketClass;
  /** How often the live session takes a fresh token from `token` without reconnecting (default 5 min). */
  sessionReauthMs?: number;
  /**
   * How long an idempotent call (a read, an invoke with its requestId) goes on retrying network errors
   * and 502/503/504 from its first failure, to ride out a restart (default 30 s); its signal ends it sooner.
   */
  retryBudgetMs?: number;
}
