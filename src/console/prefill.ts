// No preact and no DOM here: test/unit/console-form.test.ts runs it under Bun.
import type { Draft, Drafts, Field } from "./fields.ts";

/**
 * The form's values that stand for `input` (the inverse of `inputOf`): "run again with this input".
 * A property the form has no field for is dropped (the action's contract changed since), and so is a
 * value of the wrong type for its field, which the person then fills in.
 */
export function valuesOf(fields: Field[], input: unknown): Drafts {
  const values: Drafts = {};
  if (!input || typeof input !== "object" || Array.isArray(input)) return values;
  const given = input as Record<string, unknown>;
  for (const field of fields) {
    const draft = draftOf(field, given[field.name]);
    if (draft !== undefined) values[field.name] = draft;
  }
  return values;
}

function draftOf(field: Field, value: unknown): Draft | undefined {
  if (value === undefined) return undefined;
  switch (field.kind) {
    case "json":
      return JSON.stringify(value, null, 2);
    case "boolean":
      return typeof value === "boolean" ? value : undefined;
    case "number":
    case "integer":
      return typeof value === "number" ? String(value) : undefined;
    case "enum":
      return field.options.includes(String(value)) ? String(value) : undefined;
    case "object":
      return value && typeof value === "object" && !Array.isArray(value) ? valuesOf(field.fields, value) : undefined;
    case "array":
      return Array.isArray(value) ? value.map((item) => draftOf(field.item, item) ?? "") : undefined;
    default:
      return typeof value === "string" ? value : undefined;
  }
}
