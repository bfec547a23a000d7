// The paths of `/openapi.json` every release shares: built once, whatever the release and the caller.

import { PAGE_LIMIT } from "../wire/paging.ts";
import { EXECUTION_STATUSES, SCHEDULED_STATUSES } from "../wire/statuses.ts";
import { oneOf, pageOf, ref, type Schema, uuid } from "./openapi-schemas.ts";
import { variablePaths } from "./openapi-variables.ts";

export const json = (schema: Schema) => ({ "application/json": { schema } });
export const error = (description: string) => ({ description, content: json(ref("Error")) });

/** The errors every authenticated endpoint may answer, beside its own. */
export const COMMON_ERRORS = {
  "400": error("invalid_request or action_contract_validation_failed: the request is malformed (issues name where)"),
  "401": error("unauthorized: no valid bearer credential"),
  "429": error("limit_reached"),
  "503": error("database_unavailable: try again after Retry-After"),
};

const page = [
  { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: PAGE_LIMIT.max } },
  { name: "cursor", in: "query", schema: { type: "string" }, description: "nextCursor of the previous page" },
];
const idParameter = (name: string, description: string) => ({
  name,
  in: "path",
  required: true,
  schema: uuid,
  description,
});
const versionParameter = { name: "version", in: "path", required: true, schema: { type: "string" } };
const filenameParameter = { name: "filename", in: "query", required: true, schema: { type: "string" } };
/** ISO 8601: a date (midnight UTC) or a date-time with its zone. */
const instant = { type: "string" } as const;

const get = (operation: string, description: string, schema: Schema, extra: Record<string, unknown> = {}) => ({
  get: {
    operationId: operation,
    ...extra,
    responses: { "200": { description, content: json(schema) }, ...COMMON_ERRORS },
  },
});

const actionPaths = {
  "/actions": get("listActions", "the actions this caller may know of", {
    type: "object",
    properties: { items: { type: "array", items: ref("ActionSummary") } },
  }),
  "/describe": get("describe", "the release as this caller may know it (the MCP describe tool's document)", {
    type: "object",
  }),
};

const releasePaths = {
  "/releases": {
    ...get("listReleases", "the release history, newest first (service keys)", ref("ReleasePage"), {
      parameters: page,
    }),
    post: {
      operationId: "publishRelease",
      requestBody: { required: true, content: json(ref("ReleaseUpload")) },
      responses: {
        "200": { description: "stored (and activated unless activate is false)", content: json(ref("PublishAnswer")) },
        ...COMMON_ERRORS,
        "400": error("invalid_request: a malformed body, or a bundle that does not load or check (issues name where)"),
        "403": error("access_denied: not a service key"),
        "409": error("release_conflict: the version holds other content, or the schema change orphans stored data"),
        "413": error("payload_too_large: over MAX_RELEASE_BYTES"),
      },
    },
  },
  "/releases/{version}": get(
    "getRelease",
    "one published release with its actions' contracts (service keys)",
    ref("ReleaseContracts"),
    { parameters: [versionParameter] },
  ),
  "/releases/{version}/activate": {
    post: {
      operationId: "activateRelease",
      parameters: [versionParameter],
      responses: {
        "200": { description: "the version now active, and the one before", content: json({ type: "object" }) },
        ...COMMON_ERRORS,
      },
    },
  },
};

const executionPaths = {
  "/executions": get("listExecutions", "the caller's executions, newest first", ref("ExecutionPage"), {
    parameters: [
      ...page,
      { name: "action", in: "query", schema: { type: "string" } },
      { name: "status", in: "query", schema: oneOf(EXECUTION_STATUSES) },
      { name: "since", in: "query", description: "created at or after (ISO 8601)", schema: instant },
      { name: "until", in: "query", description: "created before (ISO 8601)", schema: instant },
      {
        name: "caller",
        in: "query",
        description: "service keys: one caller's executions, <kind>:<id>",
        schema: { type: "string", pattern: "^(user|service):.+$" },
      },
    ],
  }),
  "/executions/{id}": get("getExecution", "one execution", ref("Execution"), {
    parameters: [idParameter("id", "the execution id")],
  }),
  "/executions/{id}/result": {
    get: {
      operationId: "awaitExecution",
      parameters: [idParameter("id", "the execution id")],
      responses: {
        "200": { description: "the execution once ended (waits up to WAIT_MS)", content: json(ref("Execution")) },
        ...COMMON_ERRORS,
        "504": error("execution_result_timeout: not ended yet; ask again"),
      },
    },
  },
  "/executions/{id}/logs": get("getExecutionLogs", "the lines the execution logged, in order", ref("LogPage"), {
    parameters: [idParameter("id", "the execution id"), ...page],
  }),
  "/executions/requests/{requestId}": get("getExecutionByRequest", "the execution of a requestId", ref("Execution"), {
    parameters: [idParameter("requestId", "the requestId the caller sent")],
  }),
};

const runPaths = {
  "/runs": get("listRuns", "the caller's workflow runs, newest first", ref("RunPage"), { parameters: page }),
  "/runs/{id}": get("getRun", "one run with its steps", ref("Run"), {
    parameters: [idParameter("id", "the run id")],
  }),
  "/runs/{id}/cancel": {
    post: {
      operationId: "cancelRun",
      parameters: [idParameter("id", "the run id")],
      responses: { "200": { description: "the run after the request", content: json(ref("Run")) }, ...COMMON_ERRORS },
    },
  },
};

const schedulePaths = {
  "/schedules": get("listSchedules", "the active release's schedules with their last and next ticks (service keys)", {
    type: "object",
    properties: { release: { type: ["string", "null"] }, items: { type: "array", items: { type: "object" } } },
  }),
  "/scheduled": get(
    "listScheduled",
    "the caller's delayed invocations (ctx.schedule), newest first",
    pageOf({ type: "object" }),
    { parameters: [...page, { name: "status", in: "query", schema: oneOf(SCHEDULED_STATUSES) }] },
  ),
  "/scheduled/{id}": {
    ...get(
      "getScheduled",
      "one delayed invocation",
      { type: "object" },
      {
        parameters: [idParameter("id", "the scheduled invocation's id")],
      },
    ),
    delete: {
      operationId: "cancelScheduled",
      parameters: [idParameter("id", "the scheduled invocation's id")],
      responses: {
        "200": { description: "the invocation, canceled", content: json({ type: "object" }) },
        ...COMMON_ERRORS,
        "409": error("scheduled_not_cancelable: it has started (or is starting)"),
      },
    },
  },
};

const dataPaths = {
  "/query": {
    post: {
      operationId: "query",
      parameters: [{ name: "format", in: "query", schema: { enum: ["objects", "triples"] } }],
      requestBody: {
        required: true,
        content: json({ type: "object", required: ["query"], properties: { query: { type: "object" } } }),
      },
      responses: {
        "200": { description: "the result, as the caller may see it", content: json({ type: "object" }) },
        ...COMMON_ERRORS,
      },
    },
  },
};

const storagePaths = {
  "/storage/upload": {
    put: {
      operationId: "upload",
      parameters: [
        {
          name: "path",
          in: "header",
          required: true,
          schema: { type: "string" },
          description: "where the file goes: relative, /-separated, at most 1024 bytes",
        },
      ],
      requestBody: {
        required: true,
        description: "the file's bytes, streamed; its Content-Type is stored (default application/octet-stream)",
        content: { "*/*": { schema: { type: "string", format: "binary" } } },
      },
      responses: {
        "200": { description: "the file, stored; an existing path is replaced", content: json(ref("File")) },
        ...COMMON_ERRORS,
        "400": error("invalid_path: the path header is missing or not a path"),
        "404": error("file_not_found: the path holds another caller's file"),
        "413": error("payload_too_large: over MAX_FILE_BYTES"),
      },
    },
  },
  "/storage/signed-upload-url": {
    post: {
      operationId: "signUpload",
      requestBody: {
        required: true,
        content: json({
          type: "object",
          required: ["path", "contentType"],
          properties: { path: { type: "string" }, contentType: { type: "string" }, expiresIn: { type: "integer" } },
        }),
      },
      responses: {
        "200": { description: "a URL a browser can PUT to", content: json({ type: "object" }) },
        ...COMMON_ERRORS,
      },
    },
  },
  "/storage/signed-download-url": get(
    "signDownload",
    "a URL a browser can GET",
    { type: "object" },
    { parameters: [filenameParameter] },
  ),
  "/storage/files": {
    ...get("listFiles", "the caller's files (everyone's for a service key) in path order", ref("FilePage"), {
      parameters: [{ name: "prefix", in: "query", schema: { type: "string" } }, ...page],
    }),
    delete: {
      operationId: "deleteFile",
      parameters: [filenameParameter],
      responses: {
        "200": { description: "deleted", content: json({ type: "object", properties: { ok: { const: true } } }) },
        ...COMMON_ERRORS,
        "400": error("invalid_path"),
        "404": error("file_not_found"),
      },
    },
  },
};

const environmentPaths = {
  "/stats": get(
    "stats",
    "executions and runs by status over a window, failing actions, live sockets (service keys)",
    { type: "object" },
    { parameters: [{ name: "window", in: "query", schema: { type: "string", pattern: "^[1-9][0-9]{0,5}[smh]$" } }] },
  ),
  "/stats/series": get(
    "statsSeries",
    "executions over time in buckets of a step: created by status, failure rate and p50/p95 duration of those finished (service keys; an extension of the contract)",
    ref("StatsSeries"),
    {
      parameters: [
        { name: "window", in: "query", schema: { type: "string", pattern: "^[1-9][0-9]{0,5}[smh]$" } },
        {
          name: "step",
          in: "query",
          description:
            "the bucket's length, at most the window and at least the window / 1440; default the window / 60 in whole minutes (at least 1m)",
          schema: { type: "string", pattern: "^[1-9][0-9]{0,5}[smh]$" },
        },
        { name: "action", in: "query", description: "one action's executions only", schema: { type: "string" } },
      ],
    },
  ),
  "/sign-ins": get(
    "listSignIns",
    "the caller's signed-in apps (the built-in sign-in); a service key sees one user's, or everyone's",
    { type: "object", required: ["items"], properties: { items: { type: "array", items: ref("SignIn") } } },
    {
      parameters: [
        { name: "user", in: "query", description: "service keys: whose sign-ins", schema: { type: "string" } },
      ],
    },
  ),
  "/sign-ins/{id}": {
    delete: {
      operationId: "revokeSignIn",
      parameters: [
        { name: "id", in: "path", required: true, schema: { type: "string" }, description: "the sign-in's id" },
      ],
      responses: {
        "200": {
          description: "the sign-in, ended: its refresh tokens at once, its access tokens within TOKEN_RECHECK_MS",
          content: json(ref("SignIn")),
        },
        ...COMMON_ERRORS,
        "404": error("sign_in_not_found: none with this id (or not the caller's)"),
      },
    },
  },
  "/instances": {
    get: {
      operationId: "listInstances",
      responses: {
        "200": {
          description: "the server processes sharing the database whose heartbeat is current, oldest first",
          content: json(ref("InstanceList")),
        },
        ...COMMON_ERRORS,
        "403": error(
          "access_denied: service keys only; in hosting mode every environment's key (GET /instances on the apex, an operator key)",
        ),
      },
    },
  },
  "/healthz": { get: { operationId: "health", security: [], responses: { "200": { description: "alive" } } } },
  "/readyz": {
    get: {
      operationId: "ready",
      security: [],
      responses: {
        "200": { description: "database and storage answer" },
        "503": error("not_ready (what is down), or draining (stopping)"),
      },
    },
  },
};

export const SHARED_PATHS = {
  ...actionPaths,
  ...executionPaths,
  ...runPaths,
  ...schedulePaths,
  ...dataPaths,
  ...storagePaths,
  ...releasePaths,
  ...environmentPaths,
  ...variablePaths({
    prefix: "",
    parameters: [],
    errors: {
      ...COMMON_ERRORS,
      "403": error("access_denied: service keys only (this environment's, its organization's, or an operator's)"),
    },
    operation: (verb) => verb,
  }),
};
