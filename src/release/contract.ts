import { Kind, type TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { ValueErrorType } from "@sinclair/typebox/errors";
import type { ActionKind } from "../store/types.ts";
import { canonicalJson, sha256Hex } from "./canonical-json.ts";

/** What `GET /actions/{name}/contract` answers and what the contract hash covers (besides description). */
export interface ActionContract {
  name: string;
  kind: ActionKind;
  description: string;
  input: Record<string, unknown>;
  output: Record<string, unknown>;
  contractHash: string;
  /** File fields of the input and their limits; none until file inputs exist. */
  files: FileLimit[];
}

export interface FileLimit {
  field: string;
  maxBytes: number;
  contentTypes: string[];
}

export interface ValidationIssue {
  /** JSON pointer into the request, e.g. `/input/title`. */
  where: string;
  code: string;
  message: string;
}

export interface CompiledContract {
  contract: ActionContract;
  /** Issues of `value` against the input schema, each `where` under `/input`. Empty when it fits. */
  checkInput(value: unknown): ValidationIssue[];
  checkOutput(value: unknown): ValidationIssue[];
}

const MAX_ISSUES = 20;

/**
 * Builds an action's public contract and its validators. Object schemas that do not say otherwise
 * are closed (`additionalProperties: false`): an unknown property is refused, and the published
 * contract says so, so MCP clients and HTTP callers see the same rule the validator applies.
 */
export function compileContract(action: {
  name: string;
  kind: ActionKind;
  description: string;
  input: TSchema;
  output: TSchema;
}): CompiledContract {
  const input = closeObjects(action.input) as TSchema;
  const output = closeObjects(action.output) as TSchema;
  const files: FileLimit[] = [];
  const plainInput = toJsonSchema(input);
  const plainOutput = toJsonSchema(output);
  const contractHash = sha256Hex(
    canonicalJson({ name: action.name, kind: action.kind, input: plainInput, output: plainOutput, files }),
  );
  const inputCheck = TypeCompiler.Compile(input);
  const outputCheck = TypeCompiler.Compile(output);
  return {
    contract: {
      name: action.name,
      kind: action.kind,
      description: action.description,
      input: plainInput,
      output: plainOutput,
      contractHash,
      files,
    },
    checkInput: (value) => (inputCheck.Check(value) ? [] : issuesOf(inputCheck.Errors(value), "/input")),
    checkOutput: (value) => (outputCheck.Check(value) ? [] : issuesOf(outputCheck.Errors(value), "/output")),
  };
}

function issuesOf(errors: Iterable<{ type: ValueErrorType; path: string; message: string }>, root: string) {
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    const issue = { where: `${root}${error.path}`, code: errorCode(error.type), message: error.message };
    const key = `${issue.where} ${issue.code}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
    if (issues.length >= MAX_ISSUES) break;
  }
  return issues;
}

/** `ValueErrorType.ObjectRequiredProperty` → `object_required_property`. */
function errorCode(type: ValueErrorType): string {
  const name = ValueErrorType[type] ?? "invalid";
  return name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase();
}

function toJsonSchema(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

/** A deep copy (symbol keys included, which TypeBox's compiler needs) with open object schemas closed. */
function closeObjects(node: unknown, insideAllOf = false): unknown {
  if (Array.isArray(node)) return node.map((item) => closeObjects(item, insideAllOf));
  if (node === null || typeof node !== "object") return node;
  const source = node as Record<string | symbol, unknown>;
  const copy: Record<string | symbol, unknown> = {};
  for (const key of Reflect.ownKeys(source)) {
    // Members of an intersection must stay open, or no value could satisfy all of them.
    copy[key] = closeObjects(source[key], key === "allOf");
  }
  const isObjectSchema = source[Kind] === "Object" || (source.type === "object" && "properties" in source);
  if (isObjectSchema && !insideAllOf && !("additionalProperties" in source)) copy.additionalProperties = false;
  return copy;
}
