// The JSON Schemas of `components.schemas` in `/openapi.json`: the answers of `src/wire/views.ts`, as JSON Schema.

import { RELEASE_VERSION } from "../release/activate.ts";
import {
  ACCESS_KINDS,
  ACTION_KINDS,
  EXECUTION_STATUSES,
  LOG_LEVELS,
  PRINCIPAL_KINDS,
  RUN_STATUSES,
  STEP_KINDS,
  STEP_STATUSES,
} from "../wire/statuses.ts";
import { VARIABLE_SCHEMA } from "./openapi-variables.ts";

export type Schema = Record<string, unknown>;

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const oneOf = (values: readonly string[]) => ({ enum: [...values] });
export const uuid = { type: "string", format: "uuid" };
const text = { type: "string" };
const instant = { type: "string", format: "date-time" };
const nullable = (type: string, extra: Schema = {}) => ({ type: [type, "null"], ...extra });
const object = (required: string[], properties: Record<string, unknown>, extra: Schema = {}) => ({
  type: "object",
  required,
  properties,
  ...extra,
});
const arrayOf = (items: Schema) => ({ type: "array", items });

/** A list's page: its items and where the next one starts (null on the last). */
export const pageOf = (items: Schema) =>
  object(["items", "nextCursor"], { items: arrayOf(items), nextCursor: nullable("string") });

/** A value a list left out, by its size (`inputTruncated: { bytes }`, …): by id it is answered whole. */
const truncated = object(["bytes"], { bytes: { type: "integer" } });
const truncations = {
  inputTruncated: truncated,
  outputTruncated: truncated,
  errorMessageTruncated: truncated,
};

const error = object(["ok", "error", "message"], {
  ok: { const: false },
  error: { type: "string", description: "a stable code (docs/API.md lists them)" },
  message: text,
  details: {
    type: "object",
    properties: {
      issues: arrayOf({ type: "object", properties: { where: text, code: text, message: text } }),
    },
  },
  executionId: nullable("string"),
  requestId: nullable("string"),
});

const principal = object(["kind", "id"], { kind: oneOf(PRINCIPAL_KINDS), id: text });

const upload = object(["field", "path", "filename", "contentType", "size"], {
  field: text,
  path: text,
  filename: text,
  contentType: text,
  size: { type: "integer" },
});

const execution = object(
  ["id", "requestId", "action", "kind", "status", "principal", "releaseVersion", "contractHash"],
  {
    id: uuid,
    requestId: uuid,
    action: text,
    kind: oneOf(ACTION_KINDS),
    status: oneOf(EXECUTION_STATUSES),
    input: {},
    output: { description: "present once succeeded" },
    errorCode: text,
    errorMessage: text,
    principal: ref("Principal"),
    releaseVersion: text,
    contractHash: text,
    uploads: arrayOf(ref("Upload")),
    statusUrl: text,
    scheduledBy: { ...uuid, description: "a delayed invocation's: the execution whose ctx.schedule made it" },
    instance: {
      type: "string",
      description: "service keys only: the instance that ran a function execution (PostgreSQL; GET /instances)",
    },
    createdAt: instant,
    startedAt: nullable("string", { format: "date-time" }),
    finishedAt: nullable("string", { format: "date-time" }),
    ...truncations,
  },
);

const logLine = object(["seq", "at", "level", "step", "line"], {
  seq: { type: "integer", description: "the line's place in the execution's log, from 0" },
  at: instant,
  level: oneOf(LOG_LEVELS),
  step: nullable("string", { description: "the workflow step that logged it" }),
  line: text,
});

const logPage = object(["items", "nextCursor"], {
  items: arrayOf(ref("LogLine")),
  nextCursor: nullable("string", {
    description: "null once the execution has ended and every line was read; else ask again with it",
  }),
});

const file = object(["path", "contentType", "size", "sha256", "owner", "createdAt", "updatedAt"], {
  path: text,
  contentType: text,
  size: nullable("integer", { description: "null until the server has seen the bytes" }),
  sha256: nullable("string"),
  owner: ref("Principal"),
  createdAt: instant,
  updatedAt: instant,
});

/** A run's or a step's own lines: a log line without its step. */
const runLogs = arrayOf(
  object(["seq", "at", "level", "line"], {
    seq: { type: "integer" },
    at: instant,
    level: oneOf(LOG_LEVELS),
    line: text,
  }),
);

const runSummary = object(
  [
    "id",
    "executionId",
    "workflow",
    "releaseVersion",
    "status",
    "cancelRequested",
    "errorCode",
    "createdAt",
    "updatedAt",
    "finishedAt",
  ],
  {
    id: uuid,
    executionId: uuid,
    workflow: text,
    releaseVersion: text,
    status: oneOf(RUN_STATUSES),
    cancelRequested: { type: "boolean" },
    input: {},
    output: { description: "present once succeeded (null before)" },
    errorCode: nullable("string"),
    errorMessage: nullable("string"),
    statusUrl: text,
    createdAt: instant,
    updatedAt: instant,
    finishedAt: nullable("string", { format: "date-time" }),
    ...truncations,
  },
  { description: "a workflow run as lists show it: everything but its steps" },
);

const step = object(
  ["name", "kind", "status", "attempts", "output", "error", "startedAt", "finishedAt", "wakeAt", "logs"],
  {
    name: text,
    kind: oneOf(STEP_KINDS),
    status: oneOf(STEP_STATUSES),
    attempts: { type: "integer" },
    output: {},
    error: nullable("string"),
    startedAt: nullable("string", { format: "date-time" }),
    finishedAt: nullable("string", { format: "date-time" }),
    wakeAt: nullable("string", {
      format: "date-time",
      description: "when a sleeping step ends, or a retrying one tries again",
    }),
    logs: runLogs,
  },
);

const run = {
  description: "a workflow run: status, input, output or error, and its steps",
  allOf: [
    ref("RunSummary"),
    object(["logs", "steps"], {
      logs: runLogs,
      steps: arrayOf(ref("RunStep")),
      leaseHolder: nullable("string", {
        description: "service keys only: the instance holding the run's lease (null: none holds it now)",
      }),
      leaseExpiresAt: nullable("string", {
        format: "date-time",
        description:
          "service keys only: when that lease runs out unless renewed (then another instance may take the run over)",
      }),
    }),
  ],
};

const instance = object(
  ["id", "host", "pid", "startedAt", "lastHeartbeatAt", "expiresAt", "version", "self"],
  {
    id: { type: "string", description: "`<host>:<pid>:<random>`, as X-Actuate-Instance names it" },
    host: text,
    pid: { type: "integer" },
    startedAt: instant,
    lastHeartbeatAt: nullable("string", { format: "date-time" }),
    expiresAt: nullable("string", {
      format: "date-time",
      description: "taken for dead once this passes without a heartbeat; null on SQLite (one process)",
    }),
    version: nullable("string", { description: "the server version it runs" }),
    self: { type: "boolean", description: "the instance that answered" },
  },
  { description: "a server process sharing the database" },
);

const signIn = object(
  ["id", "user", "client", "signedInAt", "lastRefreshAt", "expiresAt"],
  {
    id: text,
    user: text,
    client: object(["id", "name"], { id: text, name: text }),
    signedInAt: instant,
    lastRefreshAt: nullable("string", { format: "date-time" }),
    expiresAt: nullable("string", { format: "date-time" }),
  },
  { description: "an app a person signed in to through the built-in sign-in (one grant)" },
);

const actionSummary = object(["name", "kind", "description", "access", "contractHash"], {
  name: text,
  kind: oneOf(ACTION_KINDS),
  description: text,
  access: oneOf(ACCESS_KINDS),
  contractHash: text,
});

const contract = object(["name", "kind", "input", "output", "contractHash"], {
  name: text,
  kind: oneOf(ACTION_KINDS),
  description: text,
  access: oneOf(ACCESS_KINDS),
  input: { type: "object", description: "JSON Schema" },
  output: { type: "object", description: "JSON Schema" },
  contractHash: text,
  files: arrayOf(
    object(["field", "required", "maxBytes", "contentTypes"], {
      field: text,
      required: { type: "boolean" },
      maxBytes: nullable("integer", { description: "null: the server's MAX_FILE_BYTES" }),
      contentTypes: arrayOf(text),
    }),
  ),
});

const release = object(["version", "bundleHash", "publishedAt", "publishedBy", "active", "activatedAt"], {
  version: text,
  bundleHash: text,
  publishedAt: instant,
  publishedBy: nullable("string", { description: "as the publisher named itself; null when not said" }),
  active: { type: "boolean" },
  activatedAt: nullable("string", { format: "date-time", description: "the active release's; null on the others" }),
});

const releaseContracts = {
  allOf: [
    ref("Release"),
    object(["description", "actions"], { description: nullable("string"), actions: arrayOf(ref("Contract")) }),
  ],
};

const change = oneOf(["added", "removed", "changed", "unchanged"]);

const releaseUpload = object(
  ["bundle", "defaultVersion"],
  {
    bundle: {
      type: "string",
      description: "the ES module `release publish` builds (never source: the server does not build)",
    },
    defaultVersion: { type: "string", description: "the version when neither `version` nor release.ts names one" },
    version: { type: "string", pattern: RELEASE_VERSION.source },
    force: { type: "boolean", description: "publish even when the schema change orphans stored data" },
    activate: { type: "boolean", description: "false: store it only (default true)" },
    publishedBy: { type: "string", description: "a label for the history; default the service key's id" },
  },
  { additionalProperties: false },
);

const publishAnswer = object(["version", "status", "activated", "previous", "changes", "scheduleChanges"], {
  version: text,
  status: oneOf(["published", "existing"]),
  activated: { type: "boolean" },
  previous: nullable("string", { description: "the active release before this publish" }),
  changes: arrayOf(object(["name", "change", "contractHash"], { name: text, change, contractHash: text })),
  scheduleChanges: arrayOf(object(["name", "change"], { name: text, change })),
});

const countsByStatus = object(
  [...EXECUTION_STATUSES],
  Object.fromEntries(EXECUTION_STATUSES.map((s) => [s, { type: "integer" }])),
);
const statsSeries = object(["window", "stepMs", "action", "buckets"], {
  window: object(["since", "until"], { since: instant, until: instant }),
  stepMs: { type: "integer" },
  action: nullable("string"),
  buckets: arrayOf(
    object(["at", "executions", "failureRate", "durationMs"], {
      at: instant,
      executions: countsByStatus,
      failureRate: nullable("number", { minimum: 0, maximum: 1 }),
      durationMs: {
        oneOf: [{ type: "null" }, object(["p50", "p95"], { p50: { type: "number" }, p95: { type: "number" } })],
      },
    }),
  ),
});

export const COMPONENTS = {
  securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "a service key, a user token or a JWT" } },
  schemas: {
    Error: error,
    Principal: principal,
    Upload: upload,
    Execution: execution,
    ExecutionPage: pageOf(ref("Execution")),
    LogLine: logLine,
    LogPage: logPage,
    File: file,
    FilePage: pageOf(ref("File")),
    RunSummary: runSummary,
    RunStep: step,
    Run: run,
    RunPage: pageOf(ref("RunSummary")),
    SignIn: signIn,
    ActionSummary: actionSummary,
    Contract: contract,
    Release: release,
    ReleasePage: pageOf(ref("Release")),
    ReleaseContracts: releaseContracts,
    ReleaseUpload: releaseUpload,
    PublishAnswer: publishAnswer,
    Instance: instance,
    InstanceList: object(["items"], { items: arrayOf(ref("Instance")) }),
    Variable: VARIABLE_SCHEMA,
    StatsSeries: statsSeries,
  },
};
