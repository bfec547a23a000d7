import type { DataService } from "../data/service.ts";
import type { FileService } from "../files/service.ts";
import type { Log } from "../observe/log.ts";
import { Telemetry } from "../observe/telemetry.ts";
import type { LoadedRelease } from "../release/load.ts";
import type { Store } from "../store/store.ts";
import { ExecutionFeed } from "./execution-feed.ts";
import { DEFAULT_LOG_LIMITS, type LogLimits } from "./execution-log.ts";
import { DEFAULT_MAX_OUTPUT_BYTES } from "./executions.ts";
import { NO_VARIABLES, type VariableSnapshot } from "./variable-snapshot.ts";

/**
 * What the engine's subsystems share, built once per engine: each takes the part it uses
 * (`Pick<EngineResources, …>`), and its own settings beside it.
 */
export interface EngineResources {
  store: Store;
  data: DataService;
  files: FileService;
  /** Status changes and log lines of the executions running in this process (for followers here). */
  feed: ExecutionFeed;
  log: Log;
  now: () => number;
  /** Metrics and tracer of the server. */
  telemetry: Telemetry;
  /** The release to serve now; each call reads it once and keeps it until the call ends. */
  release: () => LoadedRelease | null;
  /** Any stored release by version (a workflow run stays on the release it started with). */
  releaseVersion: (version: string) => Promise<LoadedRelease>;
  /** How many lines and bytes of log one execution keeps (EXECUTION_LOG_LINES, EXECUTION_LOG_BYTES). */
  logLimits: LogLimits;
  /** The largest output (or step result) an execution may return, as JSON (MAX_OUTPUT_BYTES). */
  maxOutputBytes: number;
  /** The environment's variables and secrets now (`ctx.env`, redaction); none unless the server gives them. */
  variables: () => VariableSnapshot;
}

/** The resources a server gives; the rest have defaults (a fresh, unread telemetry; 1,000 lines, 256 KiB of log; 8 MiB of output). */
export type GivenResources = Omit<EngineResources, Defaulted | "feed"> & Partial<Pick<EngineResources, Defaulted>>;

type Defaulted = "now" | "telemetry" | "logLimits" | "maxOutputBytes" | "variables";

export function engineResources(given: GivenResources): EngineResources {
  return {
    store: given.store,
    data: given.data,
    files: given.files,
    feed: new ExecutionFeed(),
    log: given.log,
    now: given.now ?? Date.now,
    telemetry: given.telemetry ?? new Telemetry(),
    release: given.release,
    releaseVersion: given.releaseVersion,
    logLimits: given.logLimits ?? DEFAULT_LOG_LIMITS,
    maxOutputBytes: given.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
    variables: given.variables ?? (() => NO_VARIABLES),
  };
}
