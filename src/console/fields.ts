// No preact and no DOM here: test/console-form.test.ts runs it under Bun.
import type { ActionContract } from "../client/index.ts";

export type Schema = Record<string, unknown>;

/** How one input field is edited: the kinds a form can show; anything else is typed as JSON. */
export type Field =
  | {
      name: string;
      required: boolean;
      kind: "string" | "number" | "integer" | "boolean" | "json";
      description?: string;
    }
  | { name: string; required: boolean; kind: "enum"; options: string[]; description?: string };

const constsOf = (schema: Schema): string[] | null => {
  if (Array.isArray(schema.enum)) return schema.enum.map(String);
  const alternatives = schema.anyOf;
  if (Array.isArray(alternatives) && alternatives.every((a: Schema) => "const" in a))
    return alternatives.map((a: Schema) => String(a.const));
  return null;
};

/** The fields of an object input schema, in its order. */
export function fieldsOf(input: Schema): Field[] {
  const properties = (input.properties ?? {}) as Record<string, Schema>;
  const required = new Set((input.required ?? []) as string[]);
  return Object.entries(properties).map(([name, schema]): Field => {
    const base = { name, required: required.has(name), description: schema.description as string | undefined };
    const options = constsOf(schema);
    if (options) return { ...base, kind: "enum", options };
    const type = schema.type;
    if (type === "string" || type === "number" || type === "integer" || type === "boolean")
      return { ...base, kind: type };
    return { ...base, kind: "json" };
  });
}

/** The input the form's text values stand for; an empty optional field is left out. */
export function inputOf(fields: Field[], values: Record<string, string | boolean>): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const field of fields) {
    const value = values[field.name];
    if (field.kind === "boolean") {
      if (value !== undefined || field.required) input[field.name] = value === true;
      continue;
    }
    if (value === undefined || value === "") {
      if (!field.required) continue;
      if (field.kind !== "string") continue; // the server names the missing field
      input[field.name] = "";
      continue;
    }
    const text = String(value);
    if (field.kind === "number" || field.kind === "integer") input[field.name] = Number(text);
    else if (field.kind === "json") input[field.name] = JSON.parse(text);
    else input[field.name] = text;
  }
  return input;
}

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
