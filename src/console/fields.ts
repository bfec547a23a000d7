// No preact and no DOM here: test/unit/console-form.test.ts runs it under Bun.
import type { ActionContract } from "../client/index.ts";

export type Schema = Record<string, unknown>;

/**
 * How one input field is edited: the kinds a form can show. An object with properties is a group of
 * fields, an array a list of items of one field; anything else (unions of types, maps, tuples) is
 * typed as JSON.
 */
export type Field = {
  name: string;
  required: boolean;
  description?: string;
  /** What the schema says a value must be, checked before sending (only when it says anything). */
  limits?: Limits;
  /** A number's unit, from its name (`timeoutMs` → ms). */
  unit?: string;
} & (
  | { kind: "string" | "number" | "integer" | "boolean" | "json" }
  | { kind: "enum"; options: string[] }
  | { kind: "object"; fields: Field[] }
  | { kind: "array"; item: Field }
);

/** What the form holds for a field: text (or a box's tick), a group's values, a list's items. */
export type Draft = string | boolean | Drafts | Draft[];
export type Drafts = { [name: string]: Draft };

const constsOf = (schema: Schema): string[] | null => {
  if (Array.isArray(schema.enum)) return schema.enum.map(String);
  const alternatives = schema.anyOf;
  if (Array.isArray(alternatives) && alternatives.every((a: Schema) => "const" in a))
    return alternatives.map((a: Schema) => String(a.const));
  return null;
};

/** Deeper than this, a nested object or array is typed as JSON rather than opened up. */
const MAX_DEPTH = 4;

function fieldOf(name: string, schema: Schema, required: boolean, depth: number): Field {
  const base = { name, required, description: schema.description as string | undefined, ...limitsOf(schema) };
  const options = constsOf(schema);
  if (options) return { ...base, kind: "enum", options };
  const type = schema.type;
  if (type === "number" || type === "integer") {
    const unit = unitOf(name);
    return unit ? { ...base, kind: type, unit } : { ...base, kind: type };
  }
  if (type === "string" || type === "boolean") return { ...base, kind: type };
  if (depth < MAX_DEPTH && type === "object" && schema.properties && !schema.patternProperties)
    return { ...base, kind: "object", fields: fieldsAt(schema, depth + 1) };
  if (depth < MAX_DEPTH && type === "array" && schema.items && !Array.isArray(schema.items))
    return { ...base, kind: "array", item: fieldOf("item", schema.items as Schema, true, depth + 1) };
  return { ...base, kind: "json" };
}

function fieldsAt(input: Schema, depth: number): Field[] {
  const properties = (input.properties ?? {}) as Record<string, Schema>;
  const required = new Set((input.required ?? []) as string[]);
  return Object.entries(properties).map(([name, schema]) => fieldOf(name, schema, required.has(name), depth));
}

/** The fields of an object input schema, in its order. */
export function fieldsOf(input: Schema): Field[] {
  return fieldsAt(input, 0);
}

/** The input the form's values stand for; an empty optional field (or group, or list) is left out. */
export function inputOf(fields: Field[], values: Drafts): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const field of fields) {
    const value = fieldValue(field, values[field.name]);
    if (value !== ABSENT) input[field.name] = value;
  }
  return input;
}

const ABSENT = Symbol("absent");

function fieldValue(field: Field, draft: Draft | undefined): unknown {
  switch (field.kind) {
    case "boolean":
      return draft !== undefined || field.required ? draft === true : ABSENT;
    case "object":
      // An optional group nothing was typed into is left out, whatever its own fields require.
      if (!field.required && blank(draft)) return ABSENT;
      return inputOf(field.fields, isDrafts(draft) ? draft : {});
    case "array": {
      const items = Array.isArray(draft) ? draft.map((item) => fieldValue(field.item, item)) : [];
      // An item left empty is still an item: the server names what it lacks.
      const list = items.map((item) => (item === ABSENT ? null : item));
      return list.length > 0 || field.required ? list : ABSENT;
    }
  }
  if (draft === undefined || draft === "" || typeof draft !== "string") {
    if (!field.required || field.kind !== "string") return ABSENT; // the server names the missing field
    return "";
  }
  if (field.kind === "number" || field.kind === "integer") return Number(draft);
  if (field.kind === "json") return JSON.parse(draft);
  return draft;
}

/** Nothing typed, ticked or added, at any depth. */
const blank = (draft: Draft | undefined): boolean =>
  draft === undefined ||
  draft === "" ||
  draft === false ||
  (Array.isArray(draft) ? draft.length === 0 : typeof draft === "object" && Object.values(draft).every(blank));

const isDrafts = (draft: Draft | undefined): draft is Drafts =>
  typeof draft === "object" && draft !== null && !Array.isArray(draft);

/** A file input of the contract (`files`): it travels beside the JSON input, as a part of a multipart invoke. */
export type FileField = ActionContract["files"][number];

/** The picker's `accept`: the types the contract allows (any when it lists none). */
export const acceptOf = (file: FileField) => file.contentTypes.join(",");

/** The contract's limits in words, beside the picker (the server checks them). */
export function fileLimitsOf(file: FileField): string {
  const types = file.contentTypes.length > 0 ? file.contentTypes.join(" or ") : "any type";
  if (file.maxBytes === null) return types;
  const size =
    file.maxBytes < 1024 ** 2
      ? `${Math.floor(file.maxBytes / 1024)} KiB`
      : `${(file.maxBytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${types}, up to ${size}`;
}

/** The JSON Schema keywords the form checks; the server checks them all again. */
export type Limits = Partial<{
  minLength: number;
  maxLength: number;
  pattern: string;
  minimum: number;
  maximum: number;
  exclusiveMinimum: number;
  exclusiveMaximum: number;
}>;

const LIMIT_KEYWORDS = [
  "minLength",
  "maxLength",
  "pattern",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
] as const;

const limitsOf = (schema: Schema): { limits?: Limits } => {
  const limits: Record<string, unknown> = {};
  for (const keyword of LIMIT_KEYWORDS)
    if (typeof schema[keyword] === (keyword === "pattern" ? "string" : "number")) limits[keyword] = schema[keyword];
  return Object.keys(limits).length > 0 ? { limits: limits as Limits } : {};
};

/** A numeric field's unit, as its name says it: `…Ms`, `…Seconds` or `…S`, `…Bytes`. */
export function unitOf(name: string): string | undefined {
  if (/.Ms$/.test(name)) return "ms";
  if (/.(Seconds|S)$/.test(name)) return "s";
  if (/.Bytes$/.test(name)) return "bytes";
  return undefined;
}

/**
 * What is wrong with the form's values by the schema, before anything is sent: a message per field,
 * keyed by its path (`shipTo-name`, `lines-0-qty`: the form's ids after its own). Empty: send it.
 */
export function problemsOf(fields: Field[], values: Drafts, path: string[] = []): Record<string, string> {
  const problems: Record<string, string> = {};
  for (const field of fields) Object.assign(problems, fieldProblems(field, values[field.name], [...path, field.name]));
  return problems;
}

function fieldProblems(field: Field, draft: Draft | undefined, path: string[]): Record<string, string> {
  const key = path.join("-");
  if (field.kind === "object") {
    if (!field.required && blank(draft)) return {};
    return problemsOf(field.fields, isDrafts(draft) ? draft : {}, path);
  }
  if (field.kind === "array") {
    const items = Array.isArray(draft) ? draft : [];
    return Object.assign({}, ...items.map((item, i) => fieldProblems(field.item, item, [...path, String(i)])));
  }
  if (field.kind === "boolean") return {};
  const text = typeof draft === "string" ? draft : "";
  if (text === "") {
    // An empty required string is a value (""), checked by its limits below; anything else is missing.
    if (!field.required) return {};
    if (field.kind !== "string") return { [key]: field.kind === "enum" ? "Choose one." : "Required." };
  }
  const problem = valueProblem(field, text);
  return problem ? { [key]: problem } : {};
}

function valueProblem(field: Field, text: string): string | null {
  const limits = field.limits ?? {};
  if (field.kind === "json") {
    try {
      JSON.parse(text);
      return null;
    } catch (error) {
      return `Not JSON: ${(error as Error).message}`;
    }
  }
  if (field.kind === "number" || field.kind === "integer") {
    const n = Number(text);
    if (text.trim() === "" || !Number.isFinite(n)) return "Not a number.";
    if (field.kind === "integer" && !Number.isInteger(n)) return "A whole number.";
    const unit = field.unit ? ` ${field.unit}` : "";
    if (limits.minimum !== undefined && n < limits.minimum) return `At least ${limits.minimum}${unit}.`;
    if (limits.maximum !== undefined && n > limits.maximum) return `At most ${limits.maximum}${unit}.`;
    if (limits.exclusiveMinimum !== undefined && n <= limits.exclusiveMinimum)
      return `More than ${limits.exclusiveMinimum}${unit}.`;
    if (limits.exclusiveMaximum !== undefined && n >= limits.exclusiveMaximum)
      return `Less than ${limits.exclusiveMaximum}${unit}.`;
    return null;
  }
  if (field.kind !== "string") return null;
  // JSON Schema counts characters (code points), not UTF-16 units.
  const length = [...text].length;
  if (limits.minLength !== undefined && length < limits.minLength)
    return field.required && length === 0 ? "Required." : `At least ${plural(limits.minLength, "character")}.`;
  if (limits.maxLength !== undefined && length > limits.maxLength)
    return `At most ${plural(limits.maxLength, "character")} (${length} now).`;
  if (limits.pattern !== undefined && !matches(limits.pattern, text)) return `Must match ${limits.pattern}.`;
  return null;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** A pattern the browser cannot compile is left to the server. */
const matches = (pattern: string, text: string) => {
  try {
    return new RegExp(pattern, "u").test(text);
  } catch {
    return true;
  }
};

/** What is wrong with the chosen files by the contract: a missing required one, too large, of a type it refuses. */
export function fileProblemsOf(
  fileFields: FileField[],
  chosen: Record<string, { size: number; type: string } | undefined>,
): Record<string, string> {
  const problems: Record<string, string> = {};
  for (const field of fileFields) {
    const file = chosen[field.field];
    if (!file) {
      if (field.required) problems[field.field] = "Choose a file.";
      continue;
    }
    if (field.maxBytes !== null && file.size > field.maxBytes)
      problems[field.field] = `Too large: ${file.size} bytes, at most ${field.maxBytes}.`;
    else if (field.contentTypes.length > 0 && !field.contentTypes.some((t) => typeMatches(t, file.type)))
      problems[field.field] = `Of type ${file.type || "unknown"}; must be ${field.contentTypes.join(" or ")}.`;
  }
  return problems;
}

/** `image/*` takes any image; a type's parameters (`; charset=…`) do not count. */
const typeMatches = (allowed: string, type: string) => {
  const bare = type.split(";")[0]?.trim().toLowerCase() ?? "";
  const wanted = allowed.toLowerCase();
  return wanted.endsWith("/*") ? bare.startsWith(wanted.slice(0, -1)) : bare === wanted;
};
