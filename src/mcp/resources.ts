import type { Resource, ResourceTemplate } from "@modelcontextprotocol/sdk/types.js";
import { describeRelease } from "../engine/describe.ts";
import { toRunResource } from "../engine/workflows/view.ts";
import { PublicError } from "../lib/errors.ts";
import { uuidOrNull } from "../lib/ids.ts";
import type { Principal } from "../sdk/index.ts";
import type { ToolDeps } from "./tools.ts";
import { runResourceUri, schemaResourceUri } from "./uris.ts";

export interface ResourceContents {
  uri: string;
  mimeType: string;
  text: string;
}

export const listResources = (deps: ToolDeps): Resource[] => [
  {
    uri: schemaResourceUri(deps.handle),
    name: "schema",
    title: "Environment schema",
    description: "Domains, entities, links and actions of the active release (the same as the describe tool).",
    mimeType: "application/json",
  },
];

export const listResourceTemplates = (deps: ToolDeps): ResourceTemplate[] => [
  {
    uriTemplate: runResourceUri(deps.handle, "{runId}"),
    name: "run",
    title: "Workflow run",
    description:
      "A workflow run you started, with its status, output or error, and steps (what GET /runs/{id} answers). A value over 4 KiB is left out and its size given (e.g. outputTruncated: { bytes }), as are steps past a budget (stepsTruncated: { shown, total }); statusUrl answers them whole over HTTP with the same bearer token. A workflow tool call answers its runId.",
    mimeType: "application/json",
  },
];

/** What a resource holds for `principal`; null when there is no such resource (or it is another caller's run). */
export async function readResource(
  deps: ToolDeps,
  principal: Principal,
  uri: string,
): Promise<{ contents: ResourceContents[]; kind: "schema" | "run" } | null> {
  if (uri === schemaResourceUri(deps.handle)) {
    const text = JSON.stringify(describeRelease(deps.handle, deps.engine.activeRelease(), principal));
    return { kind: "schema", contents: [{ uri, mimeType: "application/json", text }] };
  }
  const runsPrefix = runResourceUri(deps.handle, "");
  const runId = uri.startsWith(runsPrefix) ? uuidOrNull(uri.slice(runsPrefix.length)) : null;
  if (runId === null) return null;
  try {
    const { run, steps, logs } = await deps.engine.runs.getBounded(principal, runId);
    const text = JSON.stringify(toRunResource(run, steps, logs, deps.runUrl(run.id)));
    return { kind: "run", contents: [{ uri, mimeType: "application/json", text }] };
  } catch (error) {
    // Another caller's run is as absent as a missing one.
    if (error instanceof PublicError && error.code === "run_not_found") return null;
    throw error;
  }
}

/** How the tools behave, for the model (legacy `initialize` answers this alone: its servers outlive a release). */
export const TOOL_INSTRUCTIONS =
  "Each action tool runs that action as you, the signed-in caller, and records an execution (see _meta['dev.service/execution']). Use `describe` to learn the actions and their schemas, and `query` to read data.";

/** What `server/discover` tells the model: which environment this is (its release's description), then the tools. */
export function environmentInstructions(deps: ToolDeps): string {
  const description = deps.engine.activeRelease()?.manifest.description;
  return `Actuate environment "${deps.handle}"${description ? `: ${description}` : "."}\n${TOOL_INSTRUCTIONS}`;
}
