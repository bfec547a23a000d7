import type { EnvironmentStats, StatsSeries } from "../wire/views.ts";
import { actionCalls, contractsResource, describer, invoker } from "./actions.ts";
import type { ActuateError } from "./errors.ts";
import { executionsResource } from "./executions.ts";
import { filesResource } from "./files.ts";
import { retried, searchOf, transportOf } from "./http.ts";
import { type ConnectionState, liveSession } from "./live.ts";
import { optimisticLayer } from "./optimistic.ts";
import type { ReadQuery, Subscribe } from "./query-types.ts";
import { releasesResource } from "./releases.ts";
import { runsResource } from "./runs.ts";
import { signInsResource } from "./sign-ins.ts";
import type { AnyRelease, ClientOptions, ReleaseTypes } from "./types.ts";

export type { RunStatus } from "../wire/statuses.ts";
export type {
  ActionContract,
  ActionSummary,
  AttributeSchema,
  ContractChange,
  EnvironmentStats,
  Execution,
  LinkEnd,
  LogLine,
  PublishAnswer,
  PublishedRelease,
  ReleaseContracts,
  ReleaseDescription,
  ReleaseUpload,
  Run,
  RunStep,
  RunSummary,
  SignIn,
  StatsBucket,
  StatsSeries,
  StoredFile,
  Upload,
} from "../wire/views.ts";
export { ActuateError, type Issue } from "./errors.ts";
export type { ConnectionState, SessionSocket, StreamEvent, WebSocketClass } from "./live.ts";
export type {
  Exact,
  LinkType,
  Operators,
  QueryClient,
  QueryOf,
  QueryOptions,
  QueryResult,
  ReadQuery,
  Row,
  Subscribe,
  TriplesAnswer,
  Where,
} from "./query-types.ts";
export type {
  AnyRelease,
  ClientOptions,
  Invocation,
  InvokeOptions,
  OptimisticStore,
  ReleaseTypes,
  RunHandle,
} from "./types.ts";

/** A client of one environment, for browsers, Bun, Node ≥ 20 and Deno: no Node-only API. */
export function createClient<Release extends ReleaseTypes = AnyRelease>(options: ClientOptions) {
  const transport = transportOf(options);
  const live = liveSession(transport, options);
  const executions = executionsResource(transport, live);
  const optimistic = optimisticLayer((...args) => live.connection().subscribe(...args));
  const invoke = invoker(transport, executions, optimistic);
  return {
    actions: actionCalls<Release>(invoke),
    /** Invokes an action by name (for names known only at run time). */
    invoke,
    /** Reads once: `{ <entity>: rows }` typed from the query and the `Release` (or triples, `{ format: "triples" }`). */
    query: ((
      q: Record<string, unknown>,
      queryOptions: { format?: "objects" | "triples"; signal?: AbortSignal | undefined } = {},
    ) =>
      retried(
        transport,
        "POST",
        `/query?format=${queryOptions.format ?? "objects"}`,
        { query: q },
        queryOptions.signal,
      )) as ReadQuery<Release>,
    /**
     * Calls `listener` with the query's result now and after every change that alters it (the pending
     * calls' optimistic updates applied); answers how to stop. A refused query calls `onError` and ends
     * (subscribe again to ask again); a refused or revoked token calls it too, and the results come back
     * once `token` answers a new one.
     */
    subscribe: ((
      query: Record<string, unknown>,
      listener: (result: Record<string, unknown[]>) => void,
      onError?: (error: ActuateError) => void,
    ) => optimistic.subscribe(query, listener, onError)) as Subscribe<Release>,
    onConnectionChange: (listener: (state: ConnectionState) => void) => live.connection().onConnectionChange(listener),
    executions,
    /** The active release as the caller may know it: its entities, links and the actions it may call. */
    describe: describer(transport),
    /** The active release's actions the caller may call, and their contracts (for names known at run time). */
    contracts: contractsResource(transport),
    /** The release history and activation (service keys only). */
    releases: releasesResource(transport),
    runs: runsResource(transport, live),
    /** An overview of the environment over `window` (`15m`, `1h`, at most `24h`; service keys only). */
    stats: (window = "1h") => retried<EnvironmentStats>(transport, "GET", `/stats${searchOf({ window })}`),
    /** Executions over time in `step` buckets (`GET /stats/series`; service keys only), of one action if named. */
    statsSeries: (query: { window?: string; step?: string; action?: string } = {}) =>
      retried<StatsSeries>(transport, "GET", `/stats/series${searchOf(query)}`),
    /** The apps signed in as the caller through the built-in sign-in (a service key: one `user`'s, or everyone's). */
    signIns: signInsResource(transport),
    files: filesResource(transport),
    /** Closes the session socket (live queries and streams end). */
    close: live.close,
  };
}

export type ActuateClient<Release extends ReleaseTypes = AnyRelease> = ReturnType<typeof createClient<Release>>;
