import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { Kind } from "@sinclair/typebox";
import { SchemaError } from "../data/errors.ts";
import { compileDataSchema, type DataSchema, type SchemaManifest, schemaManifest } from "../data/schema.ts";
import {
  ACTION,
  type DefinedAction,
  type DefinedRelease,
  type DefinedWorkflow,
  isDefinedAction,
  isDefinedRelease,
} from "../sdk/index.ts";
import { compileDeclarations, type VariableDeclarations } from "../variables/declarations.ts";
import type { BuiltBundle } from "./build.ts";
import { BUNDLE_FILE_PATTERN } from "./bundle-format.ts";
import { type ActionContract, type CompiledContract, compileContract } from "./contract.ts";
import { ReleaseError } from "./errors.ts";
import { registerReleaseLoader } from "./loader.ts";
import { compileSchedules, type LoadedSchedule, type ScheduleManifest, scheduleManifest } from "./schedules.ts";
import { checkToolNames, mcpAlias } from "./tool-names.ts";

export type LoadedAction = LoadedFunction | LoadedWorkflow;

/** Null: the action is an MCP tool under its own name (or its underscored one, see `MCP_TOOL_NAMES`). */
interface McpAliased {
  mcpName: string | null;
}

export interface LoadedFunction extends CompiledContract, McpAliased {
  kind: "function";
  definition: DefinedAction;
}

export interface LoadedWorkflow extends CompiledContract, McpAliased {
  kind: "workflow";
  definition: DefinedWorkflow;
}

/** What a bundle holds, before a version is given to it. */
export interface LoadedBundle {
  hash: string;
  declared: DefinedRelease | null;
  actions: ReadonlyMap<string, LoadedAction>;
  data: DataSchema;
  /** The release's schedules by name, checked against its actions. */
  schedules: ReadonlyMap<string, LoadedSchedule>;
  /** The variables it declares (`ctx.env`), checked. */
  env: VariableDeclarations;
}

export interface ReleaseManifest {
  version: string;
  description: string | null;
  bundleHash: string;
  actions: ActionContract[];
  schema: SchemaManifest;
  /** Absent in releases stored before schedules existed. */
  schedules?: ScheduleManifest[];
  /** The variables it declares; a name without `default` is required. Absent when it declares none. */
  env?: VariableDeclarations;
}

export interface LoadedRelease extends LoadedBundle {
  version: string;
  manifest: ReleaseManifest;
}

/** The bundles this process has loaded, by file: one content's contracts are compiled once per process. */
const loadedBundles = new Map<string, Promise<LoadedBundle>>();

/**
 * Imports a bundle through the release loader (./loader.ts). Bundles are cached on disk by content hash, so
 * one content is imported (and its module state created) once per process, whichever versions share it;
 * its contracts too are compiled once (`start --release` publishes, then serves, the same bundle).
 */
export function loadBundle(bundle: BuiltBundle, bundlesDir: string): Promise<LoadedBundle> {
  const path = join(bundlesDir, `${bundle.hash}.js`);
  let loading = loadedBundles.get(path);
  if (!loading) {
    loading = importBundle(bundle, path, bundlesDir);
    loadedBundles.set(path, loading);
    // A bundle that failed to load is tried again next time, as before this cache.
    loading.catch(() => loadedBundles.delete(path));
  }
  return loading;
}

async function importBundle(bundle: BuiltBundle, path: string, bundlesDir: string): Promise<LoadedBundle> {
  if (!existsSync(path)) {
    mkdirSync(bundlesDir, { recursive: true });
    const temporary = `${path}.${process.pid}.${Date.now()}.tmp`;
    writeFileSync(temporary, bundle.code);
    renameSync(temporary, path);
  }
  let module: { default?: { release?: unknown; actions?: Record<string, unknown> } };
  registerReleaseLoader();
  try {
    module = await import(path);
  } catch (error) {
    throw new ReleaseError(
      `release code failed while loading${releaseFrame(error, bundlesDir)}: ${(error as Error).message}`,
    );
  }
  const exported = module.default;
  if (!exported?.actions) throw new ReleaseError("bundle has no actions export; was it built by actuate?");
  if (exported.release !== undefined && !isDefinedRelease(exported.release)) {
    throw new ReleaseError("release.ts must default-export defineRelease({ … })");
  }
  const actions = new Map<string, LoadedAction>();
  for (const [name, definition] of Object.entries(exported.actions)) {
    actions.set(name, compileAction(name, definition));
  }
  checkToolNames([...actions.entries()].map(([name, action]) => ({ name, mcpName: action.mcpName })));
  const declared = (exported.release as DefinedRelease | undefined) ?? null;
  const schedules = compileSchedules(declared, actions);
  return { hash: bundle.hash, declared, actions, data: releaseSchema(declared), schedules, env: releaseEnv(declared) };
}

function releaseEnv(declared: DefinedRelease | null): VariableDeclarations {
  const compiled = compileDeclarations(declared?.env);
  if ("problems" in compiled) throw new ReleaseError(`release.ts: ${compiled.problems.join("; ")}`);
  return compiled.declarations;
}

function releaseSchema(declared: DefinedRelease | null): DataSchema {
  try {
    return compileDataSchema(declared);
  } catch (error) {
    if (error instanceof SchemaError) throw new ReleaseError(error.message);
    throw error;
  }
}

export function asRelease(bundle: LoadedBundle, version: string): LoadedRelease {
  return {
    ...bundle,
    version,
    manifest: {
      version,
      description: bundle.declared?.description ?? null,
      bundleHash: bundle.hash,
      actions: [...bundle.actions.values()].map((a) => a.contract),
      schema: schemaManifest(bundle.data),
      // Left out when there are none, so manifests of releases without schedules read as before.
      ...(bundle.schedules.size > 0 ? { schedules: [...bundle.schedules.values()].map(scheduleManifest) } : {}),
      ...(Object.keys(bundle.env).length > 0 ? { env: bundle.env } : {}),
    },
  };
}

function compileAction(name: string, definition: unknown): LoadedAction {
  const [domain, action] = name.split(".");
  const where = `actions/${domain}/${action}`;
  if (!isDefinedAction(definition)) {
    throw new ReleaseError(`${where} must default-export defineAction({ … }) or defineWorkflow({ … })`);
  }
  if (typeof definition.description !== "string" || definition.description.trim() === "") {
    throw new ReleaseError(`${where}: description must be a non-empty string`);
  }
  const kind = definition[ACTION];
  const body = kind === "workflow" ? "run" : "handler";
  if (typeof (definition as unknown as Record<string, unknown>)[body] !== "function") {
    throw new ReleaseError(`${where}: ${body} must be a function`);
  }
  for (const part of ["input", "output"] as const) {
    const schema = definition[part] as unknown as Record<string | symbol, unknown> | undefined;
    if (!schema || typeof schema !== "object" || !(Kind in schema)) {
      throw new ReleaseError(`${where}: ${part} must be a schema built with Type (from "actuate")`);
    }
  }
  if ((definition.input as unknown as Record<symbol, unknown>)[Kind] !== "Object") {
    throw new ReleaseError(`${where}: input must be Type.Object({ … }); the request's input is always an object`);
  }
  const access = definition.access ?? "authenticated";
  if (typeof access !== "function" && access !== "authenticated" && access !== "service") {
    throw new ReleaseError(
      `${where}: access must be "authenticated", "service" or a function ({ auth, db }) => boolean; got ${JSON.stringify(access)}`,
    );
  }
  const mcpName = mcpAlias(where, definition.mcp);
  const compiled = compileContract({
    name,
    kind,
    description: definition.description,
    input: definition.input,
    output: definition.output,
    access,
  });
  if (definition[ACTION] === "workflow") {
    // A run's input is stored and replayed as JSON; file handles are not. Files travel as storage paths.
    if (compiled.contract.files.length > 0) {
      throw new ReleaseError(`${where}: a workflow takes no FileInput; upload with /storage and pass the path`);
    }
    return { ...compiled, mcpName, kind: "workflow", definition };
  }
  return { ...compiled, mcpName, kind: "function", definition };
}

/** ` at actions/x/y.ts:4:20`: where in the release's own files an error was thrown (its source map says). */
function releaseFrame(error: unknown, bundlesDir: string): string {
  const stack = error instanceof Error ? (error.stack ?? "") : "";
  for (const match of stack.matchAll(/\(?(\/[^\s()]+):(\d+):(\d+)\)?$/gm)) {
    const [, file = "", line, column] = match;
    const inRelease = relative(bundlesDir, file).split(sep).join("/");
    if (!inRelease.startsWith("..") && !BUNDLE_FILE_PATTERN.test(file)) return ` at ${inRelease}:${line}:${column}`;
  }
  return "";
}
