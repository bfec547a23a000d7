// No preact and no DOM here: test/console-form.test.ts runs it under Bun.
import type { Field } from "./fields.ts";

/**
 * The form's values that stand for `input` (the inverse of `inputOf`): "run again with this input".
 * A property the form has no field for is dropped (the action's contract changed since), and so is a
 * value of the wrong type for its field, which the person then fills in.
 */
export function valuesOf(fields: Field[], input: unknown): Record<string, string | boolean> {
  const values: Record<string, string | boolean> = {};
  if (!input || typeof input !== "object" || Array.isArray(input)) return values;
  const given = input as Record<string, unknown>;
  for (const field of fields) {
    const value = given[field.name];
    if (value === undefined) continue;
    if (field.kind === "json") values[field.name] = JSON.stringify(value, null, 2);
    else if (field.kind === "boolean") {
      if (typeof value === "boolean") values[field.name] = value;
    } else if (field.kind === "number" || field.kind === "integer") {
      if (typeof value === "number") values[field.name] = String(value);
    } else if (field.kind === "enum") {
      if (field.options.includes(String(value))) values[field.name] = String(value);
    } else if (typeof value === "string") values[field.name] = value;
  }
  return values;
}
