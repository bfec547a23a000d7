import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { mayKnow } from "../engine/access.ts";
import { describeRelease } from "../engine/describe.ts";
import type { Engine } from "../engine/engine.ts";
import { toExecutionView } from "../engine/executions.ts";
import type { InvokeOutcome } from "../engine/invocation.ts";
import { publicErrorOf } from "../lib/database-errors.ts";
import { uuidOrNull } from "../lib/ids.ts";
import { isObject } from "../lib/values.ts";
import type { Log } from "../observe/log.ts";
import type { Telemetry } from "../observe/telemetry.ts";
import type { SpanParent } from "../observe/tracing.ts";
import type { LoadedAction, LoadedRelease } from "../release/load.ts";
import { type ToolNaming, toolName } from "../release/tool-names.ts";
import type { Principal } from "../sdk/index.ts";
import { INVALID_ARGUMENTS_META } from "./arguments.ts";
import { INVALID_PARAMS, RpcError } from "./rpc-error.ts";
import { runResourceUri } from "./uris.ts";

/** `_meta` key naming the execution of every tool result, and the one an agent may send its request id under. */
export const EXECUTION_META = "dev.service/execution";
export const REQUEST_ID_META = "dev.service/requestId";

export interface ToolDeps {
  engine: Engine;
  telemetry: Telemetry;
  /** Where a call's unexpected error is logged (the client is told only that there was one). */
  log: Log;
  handle: string;
  /** `MCP_TOOL_NAMES`: how action tools without an `mcp.name` are named. */
  toolNaming: ToolNaming;
  executionUrl: (id: string) => string;
  runUrl: (id: string) => string;
}

const builtinTools: Tool[] = [
  {
    name: "query",
    title: "Query data",
    description:
      "Read data with the query language (InstaQL: { <entity>: { $: { where, limit, offset, order }, <link label>: {} } }) as the signed-in caller; the caller's permissions decide what returns. Answers { <entity>: [ { id, …attributes, <link label>: … } ] }; `describe` lists the entities and links.",
    inputSchema: {
      type: "object",
      properties: { query: { type: "object", description: "The query, keyed by entity name." } },
      required: ["query"],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  {
    name: "describe",
    title: "Describe this environment",
    description: "The active release's domains, entities, links and actions with their input and output schemas.",
    inputSchema: { type: "object", properties: {}, additionalProperties: false },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
];

/** `_meta` key of an action tool: its kind and access, which its description (the action's own) does not say. */
export const ACTION_META = "dev.service/action";

export type NamedExecution = { id: string | null; requestId: string | null; status: string; url: string | null };

/** What a call that recorded no execution names (query, describe, and refusals before any was recorded). */
const noExecution = (requestId: string | null, status: "refused" | "not_recorded"): NamedExecution => ({
  id: null,
  requestId,
  status,
  url: null,
});

/** A release's action tools under one naming, built once per release: listing and resolving cost no rebuild. */
interface ToolTable {
  /** In release order, each with the action it runs. */
  tools: { tool: Tool; action: LoadedAction }[];
  /** Every name a call may use: the listed one, and the action's own `<domain>.<action>`. */
  byName: Map<string, LoadedAction>;
}

const tables = new WeakMap<LoadedRelease, Map<ToolNaming, ToolTable>>();

function toolTable(release: LoadedRelease, naming: ToolNaming): ToolTable {
  let byNaming = tables.get(release);
  if (!byNaming) {
    byNaming = new Map();
    tables.set(release, byNaming);
  }
  let table = byNaming.get(naming);
  if (!table) {
    table = buildToolTable(release, naming);
    byNaming.set(naming, table);
  }
  return table;
}

function buildToolTable(release: LoadedRelease, naming: ToolNaming): ToolTable {
  const tools: ToolTable["tools"] = [];
  const byName = new Map<string, LoadedAction>();
  for (const action of release.actions.values()) {
    const { contract } = action;
    const name = toolName({ name: contract.name, mcpName: action.mcpName }, naming);
    tools.push({ action, tool: actionTool(name, action) });
    byName.set(contract.name, action);
    // Clients rename dotted tools unpredictably; the underscored name (or alias) is accepted in either naming.
    byName.set(toolName({ name: contract.name, mcpName: action.mcpName }, "underscore"), action);
  }
  return { tools, byName };
}

function actionTool(name: string, { contract }: LoadedAction): Tool {
  return {
    name,
    ...(name === contract.name ? {} : { title: contract.name }),
    description: contract.description,
    inputSchema: contract.input as Tool["inputSchema"],
    // A workflow's call answers its admission, not its output.
    ...(contract.kind === "function" && contract.output.type === "object"
      ? { outputSchema: contract.output as Tool["outputSchema"] }
      : {}),
    ...(contract.kind === "workflow"
      ? { annotations: { title: `${contract.name} (workflow: answers once its run is admitted)` } }
      : {}),
    _meta: { [ACTION_META]: { kind: contract.kind, access: contract.access, action: contract.name } },
  };
}

/**
 * Action tools of the active release that this caller may know of (no read-only hint: clients ask the
 * person first), then query and describe. A tool's description is its action's, exactly.
 */
export function listTools(release: LoadedRelease | null, principal: Principal, naming: ToolNaming): Tool[] {
  const actions = release
    ? toolTable(release, naming)
        .tools.filter(({ action }) => mayKnow(action, principal))
        .map(({ tool }) => tool)
    : [];
  return [...actions, ...builtinTools];
}

/**
 * Task-augmented calls (the Tasks extension): what a workflow call answers instead of its admission, and
 * a function call still running at WAIT_MS instead of `execution_result_timeout`.
 */
export interface CallOptions {
  asTask?: (runId: string, createdAt: string) => Record<string, unknown>;
  /** The HTTP request's span: the execution's parent unless the agent sent a `traceparent` in `_meta`. */
  trace?: SpanParent;
}

type CallResult = CallToolResult | Record<string, unknown>;

/**
 * Answers a `tools/call` as `principal`, in either era: its params checked, the tool run, the call counted
 * (`actuate_mcp_calls_total`). Malformed params and an unknown tool are -32602 (only the names of
 * existing tools become label values; the rest count as `unknown`).
 */
export async function callTool(
  deps: ToolDeps,
  principal: Principal,
  params: unknown,
  options: CallOptions = {},
): Promise<CallResult> {
  const { name, args, meta } = toolCallParams(params);
  // An agent's trace goes on into the execution (W3C traceparent in _meta), else the HTTP request's.
  const traceparent = meta?.traceparent;
  const trace = typeof traceparent === "string" ? traceparent : options.trace;
  let result: CallResult | null;
  try {
    result = await runTool(deps, principal, name, args, meta, { ...options, trace });
  } catch (error) {
    deps.telemetry.mcpCalled(name, "error");
    throw error;
  }
  if (!result) {
    deps.telemetry.mcpCalled("unknown", "unknown_tool");
    throw new RpcError(200, INVALID_PARAMS, `Unknown tool: ${name}`);
  }
  deps.telemetry.mcpCalled(name, result.isError === true ? "error" : "ok");
  return result;
}

/** A `tools/call`'s name, arguments and `_meta`, or -32602 saying which is malformed. */
function toolCallParams(params: unknown): {
  name: string;
  args: Record<string, unknown>;
  meta: Record<string, unknown> | undefined;
} {
  const invalid = (problem: string) => new RpcError(200, INVALID_PARAMS, `Invalid params: ${problem}`);
  if (params !== undefined && !isObject(params)) throw invalid("params must be an object");
  const { name, arguments: args = {}, _meta: meta } = params ?? {};
  if (typeof name !== "string") throw invalid("name must be a string");
  if (meta !== undefined && !isObject(meta)) throw invalid("_meta must be an object");
  // Arguments that are not an object were replaced and marked by the endpoint (markInvalidArguments).
  return { name, args: args as Record<string, unknown>, meta };
}

async function runTool(
  deps: ToolDeps,
  principal: Principal,
  name: string,
  args: Record<string, unknown>,
  meta: Record<string, unknown> | undefined,
  options: CallOptions,
): Promise<CallResult | null> {
  if (name === "describe") {
    return builtinResult(jsonResult(describeRelease(deps.handle, deps.engine.activeRelease(), principal)));
  }
  if (name === "query") return builtinResult(await runQuery(deps, principal, args.query));
  const release = deps.engine.activeRelease();
  const action = release ? toolTable(release, deps.toolNaming).byName.get(name) : undefined;
  if (!action) return null;
  const actionName = action.contract.name;
  const requestId = uuidOrNull(meta?.[REQUEST_ID_META]) ?? crypto.randomUUID();
  const refused = noExecution(requestId, "refused");

  const argumentsProblem = meta?.[INVALID_ARGUMENTS_META] as { code: string; message: string } | undefined;
  if (argumentsProblem !== undefined) {
    const issues = [{ where: "/input", code: argumentsProblem.code, message: argumentsProblem.message }];
    return refusal(
      "action_contract_validation_failed",
      "the arguments do not fit the tool's input schema",
      { details: { issues } },
      refused,
    );
  }
  let outcome: InvokeOutcome;
  try {
    if (action.contract.files.length > 0) {
      await deps.engine.authorize(principal, actionName);
      return refusal(
        "execution_files_required",
        `${actionName} takes files (${action.contract.files.map((f) => f.field).join(", ")}); invoke it over HTTP with multipart/form-data`,
        { files: action.contract.files },
        refused,
      );
    }
    outcome = await deps.engine.invoke({ principal, action: actionName, requestId, input: args, trace: options.trace });
  } catch (error) {
    const known = publicErrorOf(error);
    if (!known) throw error;
    const { executionId, executionStatus } = known.fields;
    const existing =
      typeof executionId === "string"
        ? { id: executionId, requestId, status: String(executionStatus), url: deps.executionUrl(executionId) }
        : refused;
    return refusal(known.code, known.message, known.fields, existing);
  }
  const execution = toExecutionView(outcome.execution);
  const named = {
    id: execution.id,
    requestId: execution.requestId,
    status: execution.status,
    url: deps.executionUrl(execution.id),
  };
  if (outcome.runId !== undefined && options.asTask) return options.asTask(outcome.runId, execution.createdAt);
  if (outcome.runId !== undefined) {
    const resource = runResourceUri(deps.handle, outcome.runId);
    // Agents without HTTP follow the run through resources/read.
    const admitted = {
      runId: outcome.runId,
      status: execution.status,
      statusUrl: deps.runUrl(outcome.runId),
      resource,
    };
    const result = jsonResult(admitted);
    result.content.push({
      type: "resource_link",
      uri: resource,
      name: `run ${outcome.runId}`,
      title: `${actionName} run`,
      description: "The workflow run: status, steps, output or error. Read it to follow the run.",
      mimeType: "application/json",
    });
    return { ...result, _meta: { [EXECUTION_META]: named } };
  }
  // Past WAIT_MS a call continues as a task only for a client that can poll one.
  if (!outcome.settled && options.asTask) return options.asTask(execution.id, execution.createdAt);
  if (!outcome.settled) {
    return refusal(
      "execution_result_timeout",
      `the action is still running; it continues and can be followed at ${named.url}`,
      { executionId: execution.id },
      named,
    );
  }
  if (execution.status !== "succeeded") {
    return refusal(execution.errorCode ?? "action_failed", execution.errorMessage ?? "the action failed", {}, named);
  }
  return { ...jsonResult(execution.output), _meta: { [EXECUTION_META]: named } };
}

/** query and describe record no execution; their results still carry the key, so every result has it. */
const builtinResult = (result: CallToolResult): CallToolResult => ({
  ...result,
  _meta: { [EXECUTION_META]: noExecution(null, "not_recorded") },
});

async function runQuery(deps: ToolDeps, principal: Principal, query: unknown): Promise<CallToolResult> {
  try {
    return jsonResult(await deps.engine.query(principal, query, "objects"));
  } catch (error) {
    const refused = publicErrorOf(error);
    if (!refused) throw error;
    return refusal(refused.code, refused.message, refused.fields);
  }
}

export function jsonResult(value: unknown): CallToolResult {
  const text = JSON.stringify(value ?? null);
  return {
    content: [{ type: "text", text }],
    ...(isObject(value) ? { structuredContent: value } : {}),
  };
}

/**
 * A refusal the model can read and act on: `isError`, the code and message as JSON text, and never
 * `structuredContent` (clients validate that against the tool's outputSchema even on errors).
 */
export function refusal(
  code: string,
  message: string,
  fields: Record<string, unknown>,
  execution?: NamedExecution,
): CallToolResult {
  return {
    isError: true,
    content: [{ type: "text", text: JSON.stringify({ error: code, message, ...fields }) }],
    ...(execution ? { _meta: { [EXECUTION_META]: execution } } : {}),
  };
}
