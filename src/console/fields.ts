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
  const base = { name, required, description: schema.description as string | undefined };
  const options = constsOf(schema);
  if (options) return { ...base, kind: "enum", options };
  const type = schema.type;
  if (type === "string" || type === "number" || type === "integer" || type === "boolean")
    return { ...base, kind: type };
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
