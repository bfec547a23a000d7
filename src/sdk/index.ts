/**
 * What release code imports as "actuate".
 *
 * @example
 * import { defineAction, Type } from "actuate";
 * export default defineAction({
 *   description: "Add two numbers",
 *   input: Type.Object({ a: Type.Number(), b: Type.Number() }),
 *   output: Type.Object({ sum: Type.Number() }),
 *   handler: async ({ a, b }) => ({ sum: a + b }),
 * });
 */
import type { Static, TSchema } from "@sinclair/typebox";

import { Type } from "@sinclair/typebox";

export { type Static, type TSchema, Type } from "@sinclair/typebox";

/** Marks an input property as a file: sent as a multipart part, never inside the JSON input. */
export const FILE_FIELD = "x-actuate-file";

/** A file the caller sent, as the handler receives it. */
export interface FileHandle {
  path: string;
  filename: string;
  contentType: string;
  size: number;
  text(): Promise<string>;
  bytes(): Promise<Uint8Array>;
  stream(): ReadableStream<Uint8Array>;
  signedUrl(): Promise<string>;
}

/**
 * A file field of an action's input, e.g. `attachment: FileInput({ maxBytes: 5_000_000, contentTypes: ["image/png"] })`.
 * Its limits are part of the action's contract (and its hash); `Type.Optional(FileInput())` makes it optional.
 */
export function FileInput(limits: { maxBytes?: number; contentTypes?: string[] } = {}) {
  return Type.Unsafe<FileHandle>({
    type: "object",
    description: "a file, sent as a multipart/form-data part named after this field",
    [FILE_FIELD]: { maxBytes: limits.maxBytes ?? null, contentTypes: limits.contentTypes ?? [] },
  });
}

/** Who is calling: a user token acts as that user, a service key as an administrator. */
export interface Principal {
  kind: "user" | "service";
  id: string;
  /** The verified claims of the caller's token when it is a JWT of AUTH_ISSUER (a role, a tenant, …). */
  claims?: Readonly<Record<string, unknown>>;
}

/** Reads and writes of the release's entities. Writes commit together with the execution's final status. */
export interface DataContext {
  /** Reads as the caller (its view rules apply); answers `{ <entity>: [ … ] }`. */
  query(query: Record<string, unknown>): Promise<Record<string, unknown[]>>;
  /** Creates an entity and returns its id. */
  create(entity: string, data: Record<string, unknown>): Promise<string>;
  /** Sets the patch's attributes (`null` removes an optional one). */
  update(entity: string, id: string, patch: Record<string, unknown>): Promise<void>;
  delete(entity: string, id: string): Promise<void>;
  /** Links `id` to `targetId` through the link `label` of `entity`. */
  link(entity: string, id: string, label: string, targetId: string): Promise<void>;
  unlink(entity: string, id: string, label: string, targetId: string): Promise<void>;
}

/** `ctx.log(...)`: strings as they are, other values as JSON, joined by spaces. */
export interface Logger {
  (...args: unknown[]): void;
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
}

/**
 * The environment's variables and secrets, as `ctx.env` gives them: what is set in the environment, then
 * the release's defaults. Augmented by `release types` with the release's declarations
 * (`declare module "actuate" { interface Env { STRIPE_KEY: string } }`).
 */
export interface Env {
  [name: string]: string | undefined;
}

/** A variable a release declares (`defineRelease({ env: { … } })`): without `default` it is required. */
export interface VariableDefinition {
  /** Sealed at rest, never shown, redacted from logs, errors and outputs. A secret has no default. */
  secret?: boolean;
  default?: string;
  description?: string;
}

export interface ActionContext {
  auth: Principal;
  /** The environment's variables as this invocation started (a change reaches the next invocation). */
  env: Env;
  db: DataContext;
  execution: { id: string; requestId: string };
  /**
   * Writes a line to this execution's log (level `info`; `.warn` and `.error` for those levels): kept with
   * the execution, read with `GET /executions/{id}/logs`, streamed live to `subscribe-stream`.
   */
  log: Logger;
  /** Aborted when the execution (or its workflow run) is canceled or the server shuts down. */
  signal: AbortSignal;
  /**
   * Runs `action` later, as this caller, on the release active then. Stored with this execution's writes
   * (a workflow's: its step's): if the execution fails, nothing is scheduled. Answers the scheduled
   * invocation's id (`GET /scheduled`, `ctx.cancelScheduled`).
   */
  schedule(action: string, input: Record<string, unknown>, when: ScheduleWhen): Promise<string>;
  /** Cancels a pending invocation this caller scheduled (any, for a service key), with this execution's writes. */
  cancelScheduled(id: string): Promise<void>;
}

/** When a scheduled invocation runs: `at` (a Date or epoch ms) or `afterMs` from now; give one. */
export interface ScheduleWhen {
  at?: Date | number;
  afterMs?: number;
  /** The request id it is invoked with (a UUID; default: the scheduled invocation's id). */
  requestId?: string;
}

/** What a workflow's code sees: the caller, the execution, reads (writes belong inside a step), logs, cancellation. */
export interface WorkflowContext extends ActionContext {
  run: { id: string };
}

/** What a step's function gets: writes through `db` commit together with the step's checkpoint. */
export interface StepContext extends WorkflowContext {
  /** 1 for the first try, then 2, 3, … for retries. */
  attempt: number;
}

export interface StepOptions {
  /** How many times a failing attempt is tried again (default 2: three attempts in all). */
  retries?: number;
  /** The wait before the first retry, doubling after each (default 1000 ms). */
  backoffMs?: number;
}

export interface WorkflowTools {
  /**
   * Runs `fn` once and checkpoints its JSON result under `name` (unique within the run); when the run
   * resumes, a finished step answers its checkpoint without running again. A failing attempt is retried
   * with exponential backoff; once the attempts are spent the step throws its last error.
   */
  step<T>(name: string, fn: (ctx: StepContext) => Promise<T> | T, options?: StepOptions): Promise<T>;
  /** A durable timer: the run sleeps without holding a worker and resumes at the right time, even after a restart. */
  sleep(name: string, ms: number): Promise<void>;
  ctx: WorkflowContext;
}

/** What an access rule sees: the caller, and reads as the caller (its view rules apply). */
export interface AccessContext {
  auth: Principal;
  db: Pick<DataContext, "query">;
}

/**
 * Who may run an action. `"authenticated"` (the default): any valid credential. `"service"`: service keys
 * only. A function decides per caller (it may be async and read `db`); a rule that throws refuses.
 * Service keys act as administrators: every rule lets them through.
 */
export type AccessRule = "authenticated" | "service" | ((ctx: AccessContext) => boolean | Promise<boolean>);

/** How an action shows as an MCP tool. */
export interface McpOptions {
  /**
   * The tool's name over MCP instead of `<domain>.<action>` (which many LLM APIs refuse for its dot):
   * 1–64 letters, digits, `_` or `-`, unique in the release. HTTP keeps the action's name.
   */
  name?: string;
}

export interface WorkflowDefinition<I extends TSchema = TSchema, O extends TSchema = TSchema> {
  description: string;
  input: I;
  output: O;
  access?: AccessRule;
  mcp?: McpOptions;
  run: (input: Static<I>, tools: WorkflowTools) => Promise<Static<O>> | Static<O>;
}

export interface ActionDefinition<I extends TSchema = TSchema, O extends TSchema = TSchema> {
  description: string;
  input: I;
  output: O;
  access?: AccessRule;
  mcp?: McpOptions;
  handler: (input: Static<I>, ctx: ActionContext) => Promise<Static<O>> | Static<O>;
}

/** One side of a link: the entity it starts from, how many it reaches, and the label it is read by there. */
export interface LinkEnd {
  on: string;
  has: "one" | "many";
  label: string;
}

/** A where-clause over an entity's attributes; a string value `"$auth.id"` (or `"$auth.kind"`) names the caller. */
export type WhereClause = Record<string, unknown>;

export interface ReleaseDefinition {
  version?: string;
  description?: string;
  /**
   * Entities and their attributes, each a schema built with `Type`: `Type.String({ indexed: true, unique: true })`,
   * `Type.Optional(Type.Number())`. Every entity also has an `id`.
   */
  entities?: Record<string, Record<string, TSchema>>;
  /** `{ noteAuthor: { forward: { on: "notes", has: "one", label: "author" }, reverse: { on: "users", has: "many", label: "notes" } } }` */
  links?: Record<string, { forward: LinkEnd; reverse: LinkEnd }>;
  /** Who may read each entity: `true`, `false`, or a where-clause. An entity without a rule is visible to service keys only. */
  permissions?: Record<string, { view?: boolean | WhereClause }>;
  /**
   * Actions run on a timer, by name: `{ cron: "0 3 * * *", timezone: "Europe/Paris", action: "reports.build",
   * input: { days: 1 } }` or `{ every: "30s", action: "health.ping" }`. Each tick runs once across all
   * instances, as the service principal `schedule:<name>`.
   */
  schedules?: Record<string, ScheduleDefinition>;
  /**
   * The variables the release reads as `ctx.env`: `{ STRIPE_KEY: { secret: true }, REGION: { default: "eu" } }`.
   * One without a default is required: the release is not activated where it is unset.
   */
  env?: Record<string, VariableDefinition>;
}

/** What missed ticks (the server was down) become: none, the most recent one, or each (at most 100). */
export type CatchUp = "none" | "latest" | "all";

export interface ScheduleDefinition {
  /** The action (or workflow) to run, e.g. `"reports.build"`. */
  action: string;
  /** Its input (checked against the action's contract at publish); `{}` when left out. */
  input?: Record<string, unknown>;
  /** A cron pattern (5 fields, or 6 with seconds first). Give either `cron` or `every`. */
  cron?: string;
  /** An interval: `"30s"`, `"5m"`, `"1h"`, `"1d"` (at least 1 s); ticks fall on multiples of it since the epoch. */
  every?: string;
  /** The IANA time zone a `cron` reads its hours in (default `"UTC"`). */
  timezone?: string;
  /** Missed ticks (default `"latest"`). */
  catchUp?: CatchUp;
}

// Symbol.for, not a module-local symbol: a definition must be recognised even if two copies of the SDK load.
export const ACTION = Symbol.for("actuate.action");
export const RELEASE = Symbol.for("actuate.release");

export interface DefinedAction extends ActionDefinition {
  readonly [ACTION]: "function";
}

export interface DefinedWorkflow extends WorkflowDefinition {
  readonly [ACTION]: "workflow";
}

export interface DefinedRelease extends ReleaseDefinition {
  readonly [RELEASE]: true;
}

export function defineAction<I extends TSchema, O extends TSchema>(definition: ActionDefinition<I, O>): DefinedAction {
  return { ...(definition as unknown as ActionDefinition), [ACTION]: "function" };
}

/** A durable workflow: invoking it answers 202 once its run is admitted; the run's steps are checkpointed. */
export function defineWorkflow<I extends TSchema, O extends TSchema>(
  definition: WorkflowDefinition<I, O>,
): DefinedWorkflow {
  return { ...(definition as unknown as WorkflowDefinition), [ACTION]: "workflow" };
}

export function defineRelease(definition: ReleaseDefinition = {}): DefinedRelease {
  return { ...definition, [RELEASE]: true };
}

export const isDefinedAction = (value: unknown): value is DefinedAction | DefinedWorkflow =>
  typeof value === "object" && value !== null && ACTION in value;

export const isDefinedRelease = (value: unknown): value is DefinedRelease =>
  typeof value === "object" && value !== null && RELEASE in value;
