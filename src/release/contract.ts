import { Kind, OptionalKind, type TSchema } from "@sinclair/typebox";
import { type TypeCheck, TypeCompiler } from "@sinclair/typebox/compiler";
import { ValueErrorType } from "@sinclair/typebox/errors";
import { canonicalJson, sha256Hex } from "../lib/canonical-json.ts";
import { type AccessRule, FILE_FIELD } from "../sdk/index.ts";
import type { AccessKind, ActionKind } from "../wire/statuses.ts";
import type { ActionContract, FileLimit } from "../wire/views.ts";

export type { AccessKind, ActionContract, FileLimit };

export interface ValidationIssue {
  /** JSON pointer into the request, e.g. `/input/title`. */
  where: string;
  code: string;
  message: string;
}

export interface CompiledContract {
  contract: ActionContract;
  /** Issues of `value` against the input schema, each `where` under `/input`. Empty when it fits. */
  checkInput(value: unknown): readonly ValidationIssue[];
  checkOutput(value: unknown): readonly ValidationIssue[];
  /**
   * Issues of the files sent (by field) against the file fields: missing, too large, type not listed,
   * or sent for a field that is none.
   */
  checkFiles(sent: ReadonlyMap<string, { size: number; contentType: string }>): readonly ValidationIssue[];
  /**
   * Compiles both validators now; otherwise each compiles on its first use, so a server starting with
   * many actions does not compile them all before it listens (~0.5 ms each). Publishing calls it, so a
   * schema the compiler refuses is refused when the release is published, not on a call.
   */
  compileValidators(): void;
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
  access: AccessRule;
}): CompiledContract {
  const { schema: withoutFiles, files } = splitFileFields(action.input);
  const input = closeObjects(withoutFiles) as TSchema;
  const output = closeObjects(action.output) as TSchema;
  const plainInput = toJsonSchema(input);
  const plainOutput = toJsonSchema(output);
  const access = accessKind(action.access);
  // The default access stays out of the hash, so contracts published before access existed keep theirs.
  const contractHash = sha256Hex(
    canonicalJson({
      name: action.name,
      kind: action.kind,
      input: plainInput,
      output: plainOutput,
      files,
      ...(access === "authenticated" ? {} : { access }),
    }),
  );
  const inputCheck = once(() => TypeCompiler.Compile(input));
  const outputCheck = once(() => TypeCompiler.Compile(output));
  return {
    contract: {
      name: action.name,
      kind: action.kind,
      description: action.description,
      access,
      input: plainInput,
      output: plainOutput,
      contractHash,
      files,
    },
    checkInput: (value) => check(inputCheck(), value, "/input"),
    checkOutput: (value) => check(outputCheck(), value, "/output"),
    checkFiles: (sent) => checkFiles(files, sent),
    compileValidators() {
      inputCheck();
      outputCheck();
    },
  };
}

function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => {
    made ??= { value: make() };
    return made.value;
  };
}

/** What a check that passes answers: every invoke checks its input and output, and most pass. */
const NO_ISSUES: readonly ValidationIssue[] = Object.freeze([]);

const check = (validator: TypeCheck<TSchema>, value: unknown, root: string): readonly ValidationIssue[] =>
  validator.Check(value) ? NO_ISSUES : issuesOf(validator.Errors(value), root);

const accessKind = (rule: AccessRule): AccessKind => (typeof rule === "function" ? "rule" : rule);

/** Takes the FileInput properties out of an object input schema: they travel beside the JSON input. */
function splitFileFields(input: TSchema): { schema: TSchema; files: FileLimit[] } {
  const properties = (input.properties ?? {}) as Record<string, TSchema>;
  const files: FileLimit[] = [];
  const kept: Record<string, TSchema> = {};
  for (const [field, schema] of Object.entries(properties)) {
    const limits = schema[FILE_FIELD] as { maxBytes: number | null; contentTypes: string[] } | undefined;
    if (!limits) {
      kept[field] = schema;
      continue;
    }
    files.push({ field, required: schema[OptionalKind] !== "Optional", ...limits });
  }
  if (files.length === 0) return { schema: input, files };
  const required = ((input.required ?? []) as string[]).filter((field) => field in kept);
  const schema = { ...input, properties: kept, required } as TSchema;
  if (required.length === 0) delete schema.required;
  return { schema, files };
}

function checkFiles(
  files: FileLimit[],
  sent: ReadonlyMap<string, { size: number; contentType: string }>,
): readonly ValidationIssue[] {
  if (files.length === 0 && sent.size === 0) return NO_ISSUES;
  const issues: ValidationIssue[] = [];
  for (const field of sent.keys()) {
    // HTTP reads only the parts of the contract it looked up; a release activated since may have dropped one.
    if (!files.some((limit) => limit.field === field)) {
      issues.push({ where: `/input/${field}`, code: "unknown_file", message: "the action takes no file by this name" });
    }
  }
  for (const limit of files) {
    const where = `/input/${limit.field}`;
    const file = sent.get(limit.field);
    if (!file) {
      if (limit.required)
        issues.push({
          where,
          code: "file_required",
          message: "this file is required (a multipart part named after the field)",
        });
      continue;
    }
    if (limit.maxBytes !== null && file.size > limit.maxBytes) {
      issues.push({ where, code: "file_too_large", message: `the file is larger than ${limit.maxBytes} bytes` });
    }
    if (limit.contentTypes.length > 0 && !limit.contentTypes.includes(file.contentType)) {
      issues.push({
        where,
        code: "file_type_not_allowed",
        message: `the file must be one of ${limit.contentTypes.join(", ")}`,
      });
    }
  }
  return issues;
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
