/**
 * The answers of the API as callers read them: the engine's view functions declare they produce these,
 * and `actuate/client` returns them (importing this module's types only).
 */
import type {
  AccessKind,
  ActionKind,
  ExecutionStatus,
  LogLevel,
  PrincipalKind,
  RunStatus,
  ScheduledStatus,
  StepKind,
  StepStatus,
} from "./statuses.ts";

/** Who made or owns something, as answers name them. */
export interface PrincipalRef {
  kind: PrincipalKind;
  id: string;
}

/** One page of a list; `nextCursor` is null on the last. */
export interface Page<Item> {
  items: Item[];
  nextCursor: string | null;
}

/** What a listed item says of the values it left out (over 4 KiB: `GET` by id answers them whole). */
export interface Truncations {
  inputTruncated?: { bytes: number };
  outputTruncated?: { bytes: number };
  errorMessageTruncated?: { bytes: number };
}

/** An execution's upload, as executions show it. */
export interface Upload {
  field: string;
  path: string;
  filename: string;
  contentType: string;
  size: number;
}

/** The public shape of an execution: output only once succeeded, error fields only once failed or canceled. */
export interface Execution<Output = unknown> extends Truncations {
  id: string;
  requestId: string;
  action: string;
  kind: ActionKind;
  status: ExecutionStatus;
  input?: unknown;
  output?: Output;
  errorCode?: string;
  errorMessage?: string;
  principal: PrincipalRef;
  /** The files it was invoked with, stored at `executions/<id>/<field>/<filename>`. */
  uploads?: Upload[];
  releaseVersion: string;
  contractHash: string;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** A delayed invocation's: the execution whose `ctx.schedule` made it. */
  scheduledBy?: string;
  /** The instance that ran a function execution (PostgreSQL): to service keys only, an instance id names a host. */
  instance?: string;
}

/** `POST /actions/{name}/invoke`'s answer (a workflow's names its run). */
export interface InvokeAnswer {
  kind: ActionKind;
  runId?: string;
  execution: Execution;
}

export interface LogLine {
  seq: number;
  at: string;
  level: LogLevel;
  step: string | null;
  line: string;
}

/** A stored file, as `files.list` answers it; `size` is null while a signed upload is not yet seen. */
export interface StoredFile {
  path: string;
  contentType: string;
  size: number | null;
  sha256: string | null;
  owner: PrincipalRef;
  createdAt: string;
  updatedAt: string;
}

export interface ActionSummary {
  name: string;
  kind: ActionKind;
  description: string;
  contractHash: string;
  access: AccessKind;
}

/** What `GET /actions/{name}/contract` answers and what the contract hash covers (besides description). */
export interface ActionContract extends ActionSummary {
  /** JSON Schemas. */
  input: Record<string, unknown>;
  output: Record<string, unknown>;
  /** File fields of the input (sent as multipart parts, not in `input`) and their limits. */
  files: FileLimit[];
}

export interface FileLimit {
  field: string;
  required: boolean;
  /** Null: the server's MAX_FILE_BYTES. */
  maxBytes: number | null;
  /** Empty: any type. */
  contentTypes: string[];
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

export interface PublishedRelease {
  version: string;
  bundleHash: string;
  /** When it was published (stored); a release is immutable from then on. */
  publishedAt: string;
  /** Who published it, as the publisher named itself (`--by`, else user@host); null when not said. */
  publishedBy: string | null;
  active: boolean;
  /** When the active release was last activated; null on the others (activations are not kept as history). */
  activatedAt: string | null;
}

/** A release as published: its actions' contracts, whoever may call them (what two versions are compared by). */
export interface ReleaseContracts extends PublishedRelease {
  description: string | null;
  actions: ActionContract[];
}

/** How a publish changes one action's contract (or one schedule, without its hash). */
export interface ContractChange {
  name: string;
  change: "added" | "removed" | "changed" | "unchanged";
  contractHash: string;
}

/** A release built by the CLI (`release publish --url`) or `buildRelease`, as `POST /releases` takes it. */
export interface ReleaseUpload {
  /** The ES module `release publish` builds: its sha256 is the release's content hash. */
  bundle: string;
  /** The version when neither `version` nor the bundle's release.ts names one (the CLI sends the folder's name). */
  defaultVersion: string;
  version?: string;
  /** Publish even when the schema change would orphan stored data. */
  force?: boolean;
  /** False: store it only (activate it later); default true, as the CLI's publish. */
  activate?: boolean;
  /** Who publishes, as they name themselves; default the service key's id. */
  publishedBy?: string;
}

/** What `POST /releases` answers, and what `release publish` prints, locally or over HTTP. */
export interface PublishAnswer {
  version: string;
  /** `existing`: that version already held this exact content; it was not stored again. */
  status: "published" | "existing";
  /** False when the publisher asked not to activate it: `previous` is still the active release. */
  activated: boolean;
  /** The active release before this publish; null when none was. */
  previous: string | null;
  changes: ContractChange[];
  /** How the active schedules change (activating the release replaces them all at once). */
  scheduleChanges: Omit<ContractChange, "contractHash">[];
}

/** A workflow run as `GET /runs` lists it (values over 4 KiB left out, with their size). */
export interface RunSummary extends Truncations {
  id: string;
  executionId: string;
  workflow: string;
  releaseVersion: string;
  status: RunStatus;
  cancelRequested: boolean;
  input?: unknown;
  /** Present once succeeded (null before). */
  output?: unknown;
  errorCode: string | null;
  errorMessage?: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
}

export interface RunStep {
  name: string;
  kind: StepKind;
  status: StepStatus;
  attempts: number;
  output: unknown;
  error: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  /** When a sleeping step ends, or a retrying one tries again. */
  wakeAt: string | null;
  logs: Omit<LogLine, "step">[];
}

/** A workflow run with its steps (`GET /runs/{id}`); `logs` are the lines logged outside steps. */
export interface Run extends RunSummary {
  logs: Omit<LogLine, "step">[];
  steps: RunStep[];
  /** To service keys only: the instance holding the run's lease now (null: none, it waits or has ended). */
  leaseHolder?: string | null;
  /** When that lease runs out unless renewed: another instance may take the run over after it. */
  leaseExpiresAt?: string | null;
}

/** A server process sharing the database, as `GET /instances` lists it (times ISO 8601). */
export interface Instance {
  /** `<host>:<pid>:<random>`: what executions' `instance`, runs' `leaseHolder` and `X-Actuate-Instance` name. */
  id: string;
  host: string;
  pid: number;
  startedAt: string;
  /** Null: a server older than this field wrote its row. */
  lastHeartbeatAt: string | null;
  /** Taken for dead once this passes without a heartbeat; null on SQLite (one process, no heartbeat). */
  expiresAt: string | null;
  version: string | null;
  /** The instance that answered this request. */
  self: boolean;
}

/** A delayed invocation (`ctx.schedule`) as `GET /scheduled` shows it. */
export interface ScheduledInvocation {
  id: string;
  action: string;
  input: unknown;
  requestId: string;
  dueAt: string;
  status: ScheduledStatus;
  principal: PrincipalRef;
  scheduledBy: string | null;
  executionId: string | null;
  createdAt: string;
  updatedAt: string;
}

/** `GET /stats` (service keys): an overview of the environment over a window. */
export interface EnvironmentStats {
  window: { since: string; until: string };
  /** Executions created in the window, by status (every status present, 0 when none). */
  executions: Record<ExecutionStatus, number>;
  /** Workflow runs created in the window, by status. */
  runs: Record<RunStatus, number>;
  /** The actions with the most executions created in the window that failed, most first (none: empty). */
  failingActions: { action: string; failed: number }[];
  /** Runs not ended now, whenever they started (the whole database). */
  activeRuns: { queued: number; running: number; sleeping: number };
  /** /session sockets open on this server now (not the other instances'). */
  liveSockets: number;
}

/**
 * `GET /stats/series` (service keys): executions over time, in buckets of `stepMs` aligned to the step
 * (epoch milliseconds), oldest first, every bucket present, the last the one holding `window.until` (now).
 */
export interface StatsSeries {
  /** `since`: the start of the first bucket; `until`: now. */
  window: { since: string; until: string };
  stepMs: number;
  /** The action the series is of (the `action` filter), null for all. */
  action: string | null;
  buckets: StatsBucket[];
}

/** One bucket of `StatsSeries`. */
export interface StatsBucket {
  /** The bucket's start. */
  at: string;
  /** Executions created in the bucket, by status (every status present, 0 when none). */
  executions: Record<ExecutionStatus, number>;
  /** Of the executions that finished in the bucket, the share that failed; null when none finished. */
  failureRate: number | null;
  /**
   * Of the executions that finished in the bucket, the nearest-rank p50 and p95 of their durations (created
   * to finished: what their callers waited); null when none finished.
   */
  durationMs: { p50: number; p95: number } | null;
}

/** An app a person signed in to through the built-in sign-in (one grant: a client, a person). */
export interface SignIn {
  /** The grant's id. */
  id: string;
  user: string;
  client: { id: string; name: string };
  signedInAt: string;
  /** When the app last refreshed its tokens; null when it never did (or holds no refresh token). */
  lastRefreshAt: string | null;
  /** When it ends unless revoked before; the app must sign the person in again then. */
  expiresAt: string | null;
}

/** A variable as an administrator sees it: never a secret's value. */
export interface VariableView {
  name: string;
  secret: boolean;
  /** A plain variable's value; absent for a secret (write-only) and for a declared name not set. */
  value?: string;
  /** When it was last set (ISO), null when it is not set. */
  updatedAt: string | null;
  /** Who set it (`service:<id>`, the CLI's user@host), null when unknown or not set. */
  updatedBy: string | null;
  /** Whether the active release declares it. */
  declared: boolean;
  /** Whether the active release declares it without a default. */
  required: boolean;
  set: boolean;
}
