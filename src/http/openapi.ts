import { Elysia } from "elysia";
import { describeRelease } from "../engine/describe.ts";
import type { ActionContract } from "../release/contract.ts";
import type { Principal } from "../sdk/index.ts";
import { authenticated } from "./auth.ts";
import type { HttpDeps } from "./deps.ts";

type Schema = Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Schema) => ({ "application/json": { schema } });
const error = (description: string) => ({ description, content: json(ref("Error")) });
const uuid = { type: "string", format: "uuid" };
const page = [
  { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: 200 } },
  { name: "cursor", in: "query", schema: { type: "string" }, description: "nextCursor of the previous page" },
];
const idParameter = (name: string, description: string) => ({
  name,
  in: "path",
  required: true,
  schema: uuid,
  description,
});

/** The errors every authenticated endpoint may answer, beside its own. */
const COMMON_ERRORS = {
  "400": error("invalid_request or action_contract_validation_failed: the request is malformed (issues name where)"),
  "401": error("unauthorized: no valid bearer credential"),
  "429": error("limit_reached"),
  "503": error("database_unavailable: try again after Retry-After"),
};

const COMPONENTS = {
  securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "a service key, a user token or a JWT" } },
  schemas: {
    Error: {
      type: "object",
      required: ["ok", "error", "message"],
      properties: {
        ok: { const: false },
        error: { type: "string", description: "a stable code (docs/API.md lists them)" },
        message: { type: "string" },
        details: {
          type: "object",
          properties: {
            issues: {
              type: "array",
              items: {
                type: "object",
                properties: { where: { type: "string" }, code: { type: "string" }, message: { type: "string" } },
              },
            },
          },
        },
        executionId: { type: ["string", "null"] },
        requestId: { type: ["string", "null"] },
      },
    },
    Principal: {
      type: "object",
      required: ["kind", "id"],
      properties: { kind: { enum: ["user", "service"] }, id: { type: "string" } },
    },
    Execution: {
      type: "object",
      required: ["id", "requestId", "action", "kind", "status", "principal", "releaseVersion", "contractHash"],
      properties: {
        id: uuid,
        requestId: uuid,
        action: { type: "string" },
        kind: { enum: ["function", "workflow"] },
        status: { enum: ["queued", "running", "succeeded", "failed", "canceled"] },
        input: {},
        output: { description: "present once succeeded" },
        errorCode: { type: "string" },
        errorMessage: { type: "string" },
        principal: ref("Principal"),
        releaseVersion: { type: "string" },
        contractHash: { type: "string" },
        uploads: { type: "array", items: { type: "object" } },
        statusUrl: { type: "string" },
        createdAt: { type: "string", format: "date-time" },
        startedAt: { type: ["string", "null"], format: "date-time" },
        finishedAt: { type: ["string", "null"], format: "date-time" },
      },
    },
    ExecutionPage: {
      type: "object",
      required: ["items", "nextCursor"],
      properties: { items: { type: "array", items: ref("Execution") }, nextCursor: { type: ["string", "null"] } },
    },
    LogLine: {
      type: "object",
      required: ["seq", "at", "level", "step", "line"],
      properties: {
        seq: { type: "integer", description: "the line's place in the execution's log, from 0" },
        at: { type: "string", format: "date-time" },
        level: { enum: ["info", "warn", "error"] },
        step: { type: ["string", "null"], description: "the workflow step that logged it" },
        line: { type: "string" },
      },
    },
    LogPage: {
      type: "object",
      required: ["items", "nextCursor"],
      properties: {
        items: { type: "array", items: ref("LogLine") },
        nextCursor: {
          type: ["string", "null"],
          description: "null once the execution has ended and every line was read; else ask again with it",
        },
      },
    },
    File: {
      type: "object",
      required: ["path", "contentType", "size", "sha256", "owner", "createdAt", "updatedAt"],
      properties: {
        path: { type: "string" },
        contentType: { type: "string" },
        size: { type: ["integer", "null"], description: "null until the server has seen the bytes" },
        sha256: { type: ["string", "null"] },
        owner: ref("Principal"),
        createdAt: { type: "string", format: "date-time" },
        updatedAt: { type: "string", format: "date-time" },
      },
    },
    Run: { type: "object", description: "a workflow run: status, input, output or error, and its steps" },
    RunPage: {
      type: "object",
      required: ["items", "nextCursor"],
      properties: { items: { type: "array", items: ref("Run") }, nextCursor: { type: ["string", "null"] } },
    },
    SignIn: {
      type: "object",
      description: "an app a person signed in to through the built-in sign-in (one grant)",
      required: ["id", "user", "client", "signedInAt", "lastRefreshAt", "expiresAt"],
      properties: {
        id: { type: "string" },
        user: { type: "string" },
        client: {
          type: "object",
          required: ["id", "name"],
          properties: { id: { type: "string" }, name: { type: "string" } },
        },
        signedInAt: { type: "string", format: "date-time" },
        lastRefreshAt: { type: ["string", "null"], format: "date-time" },
        expiresAt: { type: ["string", "null"], format: "date-time" },
      },
    },
    Contract: {
      type: "object",
      required: ["name", "kind", "input", "output", "contractHash"],
      properties: {
        name: { type: "string" },
        kind: { enum: ["function", "workflow"] },
        description: { type: "string" },
        access: { enum: ["authenticated", "service", "rule"] },
        input: { type: "object", description: "JSON Schema" },
        output: { type: "object", description: "JSON Schema" },
        contractHash: { type: "string" },
        files: { type: "array", items: { type: "object" } },
      },
    },
  },
};

/** `math.add` → `invoke_math_add`: operation ids are identifiers in every generator. */
const operationId = (verb: string, action: string) => `${verb}_${action.replace(/[^A-Za-z0-9]+/g, "_")}`;

function invokeOperation(action: ActionContract) {
  const envelope = {
    type: "object",
    required: ["requestId", "input"],
    additionalProperties: false,
    properties: {
      requestId: {
        ...uuid,
        description:
          "chosen by the caller, fresh per logical call and reused on retries: the same one answers the same execution",
      },
      input: action.input,
    },
  };
  const executionWithOutput = {
    allOf: [ref("Execution"), { type: "object", properties: { output: action.output } }],
  };
  const answer = {
    type: "object",
    required: ["kind", "execution", "statusUrl"],
    properties: {
      kind: { enum: ["function", "workflow"] },
      runId: { type: "string" },
      execution: executionWithOutput,
      uploads: { type: "array", items: { type: "object" } },
      statusUrl: { type: "string" },
    },
  };
  const content: Record<string, unknown> = { ...json(envelope) };
  if (action.files.length > 0) {
    content["multipart/form-data"] = {
      schema: {
        type: "object",
        required: ["request", ...action.files.filter((f) => f.required).map((f) => f.field)],
        properties: {
          request: { type: "string", description: "the JSON envelope { requestId, input }" },
          ...Object.fromEntries(action.files.map((f) => [f.field, { type: "string", format: "binary" }])),
        },
        // Any other part is refused (400 unknown_part).
        additionalProperties: false,
      },
    };
  }
  return {
    operationId: operationId("invoke", action.name),
    summary: action.description || action.name,
    tags: [action.name.split(".")[0]],
    requestBody: { required: true, content },
    responses: {
      "200": {
        description: "the execution ended (a function); a handler that failed is a `failed` execution, not an error",
        content: json(answer),
      },
      "202": {
        description: "a workflow run was admitted, or the execution outlived the wait: follow statusUrl",
        content: json(answer),
      },
      ...COMMON_ERRORS,
      "403": error("access_denied: this caller may not run the action"),
      "404": error("action_not_found"),
      "409": error("REQUEST_CONFLICT: the requestId was used with another input or action"),
      "413": error("payload_too_large"),
    },
  };
}

/**
 * The OpenAPI 3.1 document of the active release as this caller may know it: each action's invoke
 * with its own input and output schemas, and the endpoints every release shares.
 */
/** ISO 8601: a date (midnight UTC) or a date-time with its zone. */
const instant = { type: "string" } as const;

export function openApiDocument(
  deps: { handle: string; publicUrl: string },
  release: { version: string; description: string | null } | null,
  actions: ActionContract[],
) {
  const paths: Record<string, unknown> = {};
  for (const action of actions) {
    paths[`/actions/${action.name}/invoke`] = { post: invokeOperation(action) };
    paths[`/actions/${action.name}/contract`] = {
      get: {
        operationId: operationId("contract", action.name),
        tags: [action.name.split(".")[0]],
        responses: { "200": { description: "the contract", content: json(ref("Contract")) }, ...COMMON_ERRORS },
      },
    };
  }
  const get = (operation: string, description: string, schema: Schema, extra: Record<string, unknown> = {}) => ({
    get: {
      operationId: operation,
      ...extra,
      responses: { "200": { description, content: json(schema) }, ...COMMON_ERRORS },
    },
  });
  Object.assign(paths, {
    "/actions": get("listActions", "the actions this caller may know of", {
      type: "object",
      properties: { items: { type: "array", items: ref("Contract") } },
    }),
    "/describe": get("describe", "the release as this caller may know it (the MCP describe tool's document)", {
      type: "object",
    }),
    "/executions": get("listExecutions", "the caller's executions, newest first", ref("ExecutionPage"), {
      parameters: [
        ...page,
        { name: "action", in: "query", schema: { type: "string" } },
        {
          name: "status",
          in: "query",
          schema: { enum: ["queued", "running", "succeeded", "failed", "canceled"] },
        },
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
    "/schedules": get("listSchedules", "the active release's schedules with their last and next ticks (service keys)", {
      type: "object",
      properties: { release: { type: ["string", "null"] }, items: { type: "array", items: { type: "object" } } },
    }),
    "/scheduled": get(
      "listScheduled",
      "the caller's delayed invocations (ctx.schedule), newest first",
      {
        type: "object",
        properties: { items: { type: "array", items: { type: "object" } }, nextCursor: { type: ["string", "null"] } },
      },
      {
        parameters: [...page, { name: "status", in: "query", schema: { enum: ["pending", "started", "canceled"] } }],
      },
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
      {
        parameters: [{ name: "filename", in: "query", required: true, schema: { type: "string" } }],
      },
    ),
    "/storage/files": {
      ...get(
        "listFiles",
        "the caller's files (everyone's for a service key) in path order",
        {
          type: "object",
          properties: { items: { type: "array", items: ref("File") }, nextCursor: { type: ["string", "null"] } },
        },
        { parameters: [{ name: "prefix", in: "query", schema: { type: "string" } }, ...page] },
      ),
      delete: {
        operationId: "deleteFile",
        parameters: [{ name: "filename", in: "query", required: true, schema: { type: "string" } }],
        responses: {
          "200": { description: "deleted", content: json({ type: "object", properties: { ok: { const: true } } }) },
          ...COMMON_ERRORS,
          "400": error("invalid_path"),
          "404": error("file_not_found"),
        },
      },
    },
    "/releases": get(
      "listReleases",
      "the release history, newest first (service keys)",
      {
        type: "object",
        properties: { items: { type: "array", items: { type: "object" } }, nextCursor: { type: ["string", "null"] } },
      },
      { parameters: page },
    ),
    "/releases/{version}": get(
      "getRelease",
      "one published release with its actions' contracts (service keys)",
      {
        type: "object",
        properties: { version: { type: "string" }, actions: { type: "array", items: { type: "object" } } },
      },
      { parameters: [{ name: "version", in: "path", required: true, schema: { type: "string" } }] },
    ),
    "/releases/{version}/activate": {
      post: {
        operationId: "activateRelease",
        parameters: [{ name: "version", in: "path", required: true, schema: { type: "string" } }],
        responses: {
          "200": { description: "the version now active, and the one before", content: json({ type: "object" }) },
          ...COMMON_ERRORS,
        },
      },
    },
    "/stats": get(
      "stats",
      "executions and runs by status over a window, failing actions, live sockets (service keys)",
      { type: "object" },
      {
        parameters: [{ name: "window", in: "query", schema: { type: "string", pattern: "^[1-9][0-9]{0,5}[smh]$" } }],
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
    "/healthz": { get: { operationId: "health", security: [], responses: { "200": { description: "alive" } } } },
    "/readyz": {
      get: {
        operationId: "ready",
        security: [],
        responses: { "200": { description: "database and storage answer" }, "503": error("not ready") },
      },
    },
  });
  return {
    openapi: "3.1.0",
    info: {
      title: `Actuate environment ${deps.handle}`,
      version: release?.version ?? "none",
      ...(release?.description ? { description: release.description } : {}),
    },
    servers: [{ url: deps.publicUrl }],
    security: [{ bearer: [] }],
    paths,
    components: COMPONENTS,
  };
}

/** GET /openapi.json and GET /describe: the active release for integrators and their tools, as the caller may know it. */
export const describeRoutes = (deps: HttpDeps & { handle: string }) => {
  const release = () => deps.engine.activeRelease();
  const known = (principal: Principal) => (release() ? deps.engine.actions(principal) : []);
  return new Elysia({ name: "describe" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get("/openapi.json", ({ principal }) => {
      const current = release();
      return openApiDocument(
        { handle: deps.handle, publicUrl: deps.publicUrl() },
        current ? { version: current.version, description: current.manifest.description } : null,
        known(principal),
      );
    })
    .get("/describe", ({ principal }) => describeRelease(deps.handle, release(), principal));
};
