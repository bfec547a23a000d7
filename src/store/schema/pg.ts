import { sql } from "drizzle-orm";
import { bigint, boolean, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import type {
  ActionKind,
  ExecutionStatus,
  LogLevel,
  PrincipalKind,
  RunStatus,
  ScheduledStatus,
  StepKind,
  StepStatus,
} from "../statuses.ts";

// Same table names, column names and row shapes as sqlite.ts; timestamps are epoch milliseconds.

const millis = (name: string) => bigint(name, { mode: "number" });

export const releases = pgTable(
  "releases",
  {
    /** The environment the row belongs to (environments.id; 1 in single mode). */
    environment: integer("environment").notNull().default(1),
    version: text("version").notNull(),
    bundleHash: text("bundle_hash").notNull(),
    manifest: jsonb("manifest").notNull(),
    bundle: text("bundle").notNull(),
    createdAt: millis("created_at").notNull(),
    /** Who published it, as the publisher named itself (`--by`, else the OS user@host): a label, not a principal. */
    publishedBy: text("published_by"),
  },
  // The history is listed newest first (GET /releases).
  (t) => [
    primaryKey({ columns: [t.environment, t.version] }),
    index("releases_created_idx").on(t.environment, t.createdAt, t.version),
  ],
);

/**
 * The organizations of a hosting service (`actuate org create`): each owns environments, its service keys
 * act as administrator in every one of them, its grants let people use them.
 */
export const organizations = pgTable("organizations", {
  id: integer("id").primaryKey().generatedByDefaultAsIdentity({ startWith: 1 }),
  /** Unique across the service, a DNS label. */
  handle: text("handle").notNull().unique(),
  createdAt: millis("created_at").notNull(),
});

/**
 * Every environment the database holds, and which release is live in each. Single mode serves id 1 (its
 * handle null until hosting mode names it from `HANDLE`). `revision` grows on every activation of that
 * environment; `changed` is a service-wide sequence set on every change of a row, so an instance learns
 * what changed in all environments from one indexed read (`changed > last seen`).
 */
export const environments = pgTable(
  "environments",
  {
    id: integer("id").primaryKey().generatedByDefaultAsIdentity({ startWith: 2 }),
    /** Unique across the service, a DNS label: the environment is `<handle>.<service domain>`. */
    handle: text("handle").unique(),
    /** organizations.id; null for the single-mode environment until hosting mode gives it one. */
    organization: integer("organization"),
    activeVersion: text("active_version"),
    revision: integer("revision").notNull().default(0),
    /** When the active release was last activated (its `activatedAt`), else when the row was made. */
    updatedAt: millis("updated_at").notNull(),
    createdAt: millis("created_at").notNull(),
    changed: millis("changed").notNull().default(0),
    /**
     * When the active release's next schedule tick is due (null: it has none): written by the environment's
     * schedule pass, set to the activation's time by every activation, and taken for a lease's time by the
     * instance that runs the pass (hosting mode's one query for every environment's schedules).
     */
    nextTickAt: millis("next_tick_at"),
    /** The handle of the environment this one was forked from (kept as it was: the source may be deleted since). */
    forkedFrom: text("forked_from"),
    /** When the service deletes this environment (a fork's `--ttl`); null: never. */
    expiresAt: millis("expires_at"),
    /** Its release's schedules do not tick (a fork's schedules start paused). */
    schedulesPaused: boolean("schedules_paused").notNull().default(false),
  },
  (t) => [
    index("environments_changed_idx").on(t.changed),
    index("environments_organization_idx").on(t.organization),
    index("environments_next_tick_idx").on(t.nextTickAt),
    index("environments_expires_idx").on(t.expiresAt),
  ],
);

/**
 * Keys stored hashed that act as administrator in one environment (`environment` set: the key a CI job
 * deploys with) or in every environment of one organization (`organization` set). Operator keys are
 * `SERVICE_KEYS` and are not stored.
 */
export const scopedKeys = pgTable(
  "scoped_keys",
  {
    id: text("id").primaryKey(),
    keyHash: text("key_hash").notNull().unique(),
    prefix: text("prefix").notNull(),
    organization: integer("organization"),
    environment: integer("environment"),
    createdAt: millis("created_at").notNull(),
    lastUsedAt: millis("last_used_at"),
    revokedAt: millis("revoked_at"),
  },
  (t) => [
    index("scoped_keys_organization_idx").on(t.organization),
    index("scoped_keys_environment_idx").on(t.environment),
  ],
);

/**
 * Who may use which environments: a person (users.id) granted one environment of an organization, or
 * every one of them (`environment` 0).
 */
export const grants = pgTable(
  "grants",
  {
    userId: text("user_id").notNull(),
    organization: integer("organization").notNull(),
    environment: integer("environment").notNull(),
    createdAt: millis("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.userId, t.organization, t.environment] }),
    index("grants_organization_idx").on(t.organization, t.environment),
  ],
);

export const executions = pgTable(
  "executions",
  {
    /** The environment the row belongs to (environments.id; 1 in single mode). */
    environment: integer("environment").notNull().default(1),
    id: text("id").primaryKey(),
    requestId: text("request_id").notNull(),
    principalKind: text("principal_kind").$type<PrincipalKind>().notNull(),
    principalId: text("principal_id").notNull(),
    action: text("action").notNull(),
    kind: text("kind").$type<ActionKind>().notNull(),
    releaseVersion: text("release_version").notNull(),
    contractHash: text("contract_hash").notNull(),
    inputFingerprint: text("input_fingerprint").notNull(),
    input: jsonb("input").notNull(),
    status: text("status").$type<ExecutionStatus>().notNull(),
    output: jsonb("output"),
    errorCode: text("error_code"),
    errorMessage: text("error_message"),
    createdAt: millis("created_at").notNull(),
    startedAt: millis("started_at"),
    finishedAt: millis("finished_at"),
    /** The server process running a function execution, so another can fail it if that process dies. */
    instance: text("instance"),
    /** The execution whose `ctx.schedule` made this one (a delayed invocation), else null. */
    scheduledBy: text("scheduled_by"),
    /**
     * The sizes of `input` and `output` as JSON text, in UTF-8 bytes (null: no output), written with the
     * values: lists select by them and leave large values unread (jsonb has no size short of printing it).
     */
    inputBytes: integer("input_bytes").notNull(),
    outputBytes: integer("output_bytes"),
  },
  (t) => [
    uniqueIndex("executions_request_uq").on(t.environment, t.principalKind, t.principalId, t.requestId),
    index("executions_principal_id_idx").on(t.environment, t.principalKind, t.principalId, t.id),
    index("executions_running_instance_idx").on(t.instance).where(sql`status = 'running'`),
    // Retention prunes the oldest finished executions first (EXECUTION_RETENTION).
    index("executions_finished_idx").on(t.finishedAt).where(sql`finished_at is not null`),
  ],
);

/** Server processes sharing the database, alive while `expires_at` is ahead (renewed by each one's heartbeat). */
export const instances = pgTable("instances", {
  id: text("id").primaryKey(),
  startedAt: millis("started_at").notNull(),
  expiresAt: millis("expires_at").notNull(),
  /** Its last heartbeat (null: written by a server older than this column). */
  beatAt: millis("beat_at"),
  /** The server version it runs (package.json), so an operator sees a rolling upgrade. */
  version: text("version"),
});

/** People who sign in with a password (the built-in authority); `id` is the user id their tokens act as. */
export const users = pgTable("users", {
  id: text("id").primaryKey(),
  /** argon2id (Bun.password), with its parameters and salt in the PHC string. */
  passwordHash: text("password_hash").notNull(),
  createdAt: millis("created_at").notNull(),
  disabledAt: millis("disabled_at"),
});

/**
 * What the built-in authority (src/auth/authority/) keeps: clients, grants, codes, tokens, sessions,
 * interactions and its signing keys, as oidc-provider hands them over (`payload`), by model and id.
 */
export const oauthRecords = pgTable(
  "oauth_records",
  {
    model: text("model").notNull(),
    id: text("id").notNull(),
    payload: jsonb("payload").$type<Record<string, unknown>>().notNull(),
    grantId: text("grant_id"),
    /** The person a grant, code, token or session is for: what disabling the person removes. */
    accountId: text("account_id"),
    uid: text("uid"),
    userCode: text("user_code"),
    expiresAt: millis("expires_at"),
    consumedAt: millis("consumed_at"),
  },
  (t) => [
    primaryKey({ columns: [t.model, t.id] }),
    index("oauth_records_grant_idx").on(t.grantId),
    index("oauth_records_account_idx").on(t.accountId),
    index("oauth_records_uid_idx").on(t.uid),
    index("oauth_records_user_code_idx").on(t.userCode),
  ],
);

export const apiTokens = pgTable("api_tokens", {
  /** The environment the row belongs to (environments.id; 1 in single mode). */
  environment: integer("environment").notNull().default(1),
  id: text("id").primaryKey(),
  tokenHash: text("token_hash").notNull().unique(),
  prefix: text("prefix").notNull(),
  userId: text("user_id").notNull(),
  createdAt: millis("created_at").notNull(),
  revokedAt: millis("revoked_at"),
});

/** Stable ids for the triple format: one per (entity, label), kept across releases. */
export const dataAttrs = pgTable(
  "data_attrs",
  {
    /** The environment the row belongs to (environments.id; 1 in single mode). */
    environment: integer("environment").notNull().default(1),
    id: text("id").notNull(),
    entity: text("entity").notNull(),
    label: text("label").notNull(),
    createdAt: millis("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.environment, t.id] }),
    uniqueIndex("data_attrs_entity_label_uq").on(t.environment, t.entity, t.label),
  ],
);

/** Every entity of every type, its attributes as one JSON document (a new release needs no table migration). */
export const dataEntities = pgTable(
  "data_entities",
  {
    /** The environment the row belongs to (environments.id; 1 in single mode). */
    environment: integer("environment").notNull().default(1),
    id: text("id").notNull(),
    entity: text("entity").notNull(),
    doc: jsonb("doc").notNull(),
    createdAt: millis("created_at").notNull(),
    updatedAt: millis("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.environment, t.id] }),
    index("data_entities_entity_idx").on(t.environment, t.entity, t.createdAt, t.id),
  ],
);

export const dataLinks = pgTable(
  "data_links",
  {
    /** The environment the row belongs to (environments.id; 1 in single mode). */
    environment: integer("environment").notNull().default(1),
    link: text("link").notNull(),
    sourceId: text("source_id").notNull(),
    targetId: text("target_id").notNull(),
    createdAt: millis("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.environment, t.link, t.sourceId, t.targetId] }),
    index("data_links_target_idx").on(t.environment, t.link, t.targetId),
  ],
);

/** Metadata of stored files; the bytes are in the storage driver. `size`/`sha256` are null until an upload lands. */
export const files = pgTable(
  "files",
  {
    /** The environment the row belongs to (environments.id; 1 in single mode). */
    environment: integer("environment").notNull().default(1),
    path: text("path").notNull(),
    contentType: text("content_type").notNull(),
    size: millis("size"),
    sha256: text("sha256"),
    ownerKind: text("owner_kind").$type<PrincipalKind>().notNull(),
    ownerId: text("owner_id").notNull(),
    createdAt: millis("created_at").notNull(),
    updatedAt: millis("updated_at").notNull(),
    /** Set for a file sent as an execution's input: it is one of that execution's uploads. */
    executionId: text("execution_id"),
    field: text("field"),
    filename: text("filename"),
    /**
     * The environment whose storage holds the bytes when it is not this one: a fork shares its source's
     * bytes (same path) until either side changes or deletes them. Null: this environment's own.
     */
    blobEnvironment: integer("blob_environment"),
  },
  (t) => [
    primaryKey({ columns: [t.environment, t.path] }),
    index("files_blob_idx").on(t.blobEnvironment, t.path),
    index("files_execution_idx").on(t.executionId),
    // A caller's files in path order (GET /storage/files).
    index("files_owner_path_idx").on(t.environment, t.ownerKind, t.ownerId, t.path),
  ],
);

/**
 * Signed upload URLs (disk storage) that took their upload: each takes one. A grant is known by the
 * sha256 of its MAC and kept until it expires, when it could not be used anyway.
 */
export const usedUploadGrants = pgTable(
  "used_upload_grants",
  {
    grantHash: text("grant_hash").primaryKey(),
    expiresAt: millis("expires_at").notNull(),
  },
  (t) => [index("used_upload_grants_expires_idx").on(t.expiresAt)],
);

/**
 * A workflow run; its id is the id of the execution that admitted it (the execution follows the run).
 * A worker holds a run while `lease_expires_at` is ahead; `wake_at` is when a run that waits (queued,
 * sleeping, backing off before a retry) may be claimed.
 */
export const workflowRuns = pgTable(
  "workflow_runs",
  {
    /** The environment the row belongs to (environments.id; 1 in single mode). */
    environment: integer("environment").notNull().default(1),
    id: text("id").primaryKey(),
    requestId: text("request_id").notNull(),
    workflow: text("workflow").notNull(),
    releaseVersion: text("release_version").notNull(),
    principalKind: text("principal_kind").$type<PrincipalKind>().notNull(),
    principalId: text("principal_id").notNull(),
    /** The caller's verified JWT claims, so the run's steps see the ctx.auth its admission saw. */
    principalClaims: jsonb("principal_claims").$type<Record<string, unknown>>(),
    input: jsonb("input").notNull(),
    status: text("status").$type<RunStatus>().notNull(),
    output: jsonb("output"),
    errorCode: text("error_code"),
    errorMessage: text("error_message"),
    cancelRequested: boolean("cancel_requested").notNull().default(false),
    leaseOwner: text("lease_owner"),
    leaseExpiresAt: millis("lease_expires_at"),
    wakeAt: millis("wake_at").notNull(),
    createdAt: millis("created_at").notNull(),
    updatedAt: millis("updated_at").notNull(),
    finishedAt: millis("finished_at"),
    /** See executions. */
    inputBytes: integer("input_bytes").notNull(),
    outputBytes: integer("output_bytes"),
  },
  (t) => [
    index("workflow_runs_due_idx").on(t.wakeAt).where(sql`status in ('queued', 'running', 'sleeping')`),
    index("workflow_runs_principal_id_idx").on(t.environment, t.principalKind, t.principalId, t.id),
  ],
);

/** A run's checkpoints: one row per step or sleep name, its result once it succeeded. */
export const workflowSteps = pgTable(
  "workflow_steps",
  {
    /** The environment the row belongs to (environments.id; 1 in single mode). */
    environment: integer("environment").notNull().default(1),
    runId: text("run_id").notNull(),
    name: text("name").notNull(),
    seq: integer("seq").notNull(),
    kind: text("kind").$type<StepKind>().notNull(),
    status: text("status").$type<StepStatus>().notNull(),
    attempts: integer("attempts").notNull(),
    output: jsonb("output"),
    error: text("error"),
    startedAt: millis("started_at"),
    finishedAt: millis("finished_at"),
    /** See executions. */
    outputBytes: integer("output_bytes"),
  },
  (t) => [primaryKey({ columns: [t.runId, t.name] })],
);

/**
 * The lines an execution's code logged (`ctx.log`), numbered from 0 in the order written; `step` names the
 * workflow step that logged it (null outside steps and for functions). Bounded per execution by the engine.
 */
export const executionLogs = pgTable(
  "execution_logs",
  {
    /** The environment the row belongs to (environments.id; 1 in single mode). */
    environment: integer("environment").notNull().default(1),
    executionId: text("execution_id").notNull(),
    seq: integer("seq").notNull(),
    at: millis("at").notNull(),
    level: text("level").$type<LogLevel>().notNull(),
    step: text("step"),
    line: text("line").notNull(),
  },
  (t) => [primaryKey({ columns: [t.executionId, t.seq] })],
);

/**
 * Where each schedule of the active release stands: the last tick handled, and which instance holds
 * the claim to handle the next ones (while `lease_expires_at` is ahead). A schedule's row outlives it,
 * so a schedule that comes back keeps its place.
 */
export const scheduleTicks = pgTable(
  "schedule_ticks",
  {
    /** The environment the row belongs to (environments.id; 1 in single mode). */
    environment: integer("environment").notNull().default(1),
    name: text("name").notNull(),
    lastTickAt: millis("last_tick_at").notNull(),
    leaseOwner: text("lease_owner"),
    leaseExpiresAt: millis("lease_expires_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.environment, t.name] })],
);

/**
 * Delayed invocations made by `ctx.schedule` (inserted with the scheduling execution's writes). Any
 * instance may start a due one: it holds it while `lease_expires_at` is ahead, invokes it as the
 * principal that scheduled it (`request_id` makes that invocation once), then marks it `started`.
 */
export const scheduledInvocations = pgTable(
  "scheduled_invocations",
  {
    /** The environment the row belongs to (environments.id; 1 in single mode). */
    environment: integer("environment").notNull().default(1),
    id: text("id").primaryKey(),
    principalKind: text("principal_kind").$type<PrincipalKind>().notNull(),
    principalId: text("principal_id").notNull(),
    principalClaims: jsonb("principal_claims").$type<Record<string, unknown>>(),
    action: text("action").notNull(),
    input: jsonb("input").notNull(),
    requestId: text("request_id").notNull(),
    dueAt: millis("due_at").notNull(),
    /** The execution whose `ctx.schedule` made it. */
    scheduledBy: text("scheduled_by").notNull(),
    status: text("status").$type<ScheduledStatus>().notNull(),
    /** The execution it started (or the refusal recorded as one). */
    executionId: text("execution_id"),
    leaseOwner: text("lease_owner"),
    leaseExpiresAt: millis("lease_expires_at"),
    createdAt: millis("created_at").notNull(),
    updatedAt: millis("updated_at").notNull(),
  },
  (t) => [
    index("scheduled_due_idx").on(t.dueAt).where(sql`status = 'pending'`),
    index("scheduled_principal_id_idx").on(t.environment, t.principalKind, t.principalId, t.id),
  ],
);

export const variables = pgTable(
  "variables",
  {
    /** The environment the row belongs to (environments.id; 1 in single mode). */
    environment: integer("environment").notNull().default(1),
    name: text("name").notNull(),
    secret: boolean("secret").notNull().default(false),
    /** A plain variable's value; a secret's sealed value (AES-256-GCM under the key `keyId` names), never plaintext. */
    value: text("value").notNull(),
    /** A secret's key (a fingerprint of SECRETS_KEY); null for a plain variable. */
    keyId: text("key_id"),
    updatedAt: millis("updated_at").notNull(),
    /** Who set it: `service:<key id>`, `user:<id>`, or the CLI's OS user@host. */
    updatedBy: text("updated_by"),
  },
  (t) => [primaryKey({ columns: [t.environment, t.name] }), index("variables_key_idx").on(t.keyId)],
);
