import type { ActionContract } from "../release/contract.ts";
import { ACTION_KINDS } from "../wire/statuses.ts";
import { COMMON_ERRORS, error, json, SHARED_PATHS } from "./openapi-paths.ts";
import { COMPONENTS, oneOf, ref, uuid } from "./openapi-schemas.ts";

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
      kind: oneOf(ACTION_KINDS),
      runId: { type: "string" },
      execution: executionWithOutput,
      uploads: { type: "array", items: ref("Upload") },
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

/** Each action's invoke and contract, with its own input and output schemas. */
function actionPaths(actions: ActionContract[]) {
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
  return paths;
}

/**
 * The OpenAPI 3.1 document of the active release as this caller may know it: each action's invoke
 * with its own input and output schemas, and the endpoints every release shares (built once).
 */
export function openApiDocument(
  deps: { handle: string; publicUrl: string },
  release: { version: string; description: string | null } | null,
  actions: ActionContract[],
) {
  return {
    openapi: "3.1.0",
    info: {
      title: `Actuate environment ${deps.handle}`,
      version: release?.version ?? "none",
      ...(release?.description ? { description: release.description } : {}),
    },
    servers: [{ url: deps.publicUrl }],
    security: [{ bearer: [] }],
    paths: { ...actionPaths(actions), ...SHARED_PATHS },
    components: COMPONENTS,
  };
}
