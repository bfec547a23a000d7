import { isObject } from "../lib/values.ts";
import type { CompiledContract } from "../release/contract.ts";

/** An action a plain JSON invoke can call, with an input its contract accepts. */
export interface SampleCall {
  action: string;
  input: Record<string, unknown>;
}

type Schema = Record<string, unknown>;

/**
 * Picks, for the dev "try it" hint, the first action that takes no required file (a JSON curl cannot
 * send one) and for which an input made up from its contract passes validation; functions come first,
 * since they answer their output at once. Null when none can: the caller says so instead of printing
 * a curl that would fail.
 */
export function sampleCall(actions: Iterable<CompiledContract>): SampleCall | null {
  const candidates = [...actions]
    .filter(({ contract }) => !contract.files.some((file) => file.required))
    .sort((a, b) => Number(a.contract.kind === "workflow") - Number(b.contract.kind === "workflow"));
  for (const action of candidates) {
    const input = sampleOf(action.contract.input);
    if (isObject(input) && action.checkInput(input).length === 0) return { action: action.contract.name, input };
  }
  return null;
}

/**
 * A value for a JSON schema: its default, const, first enum value or example, else the smallest value
 * of its type that its bounds allow (required properties only). Undefined when it cannot tell; the
 * result is checked against the contract anyway, so a guess that misses is skipped, never sent.
 */
function sampleOf(schema: Schema): unknown {
  if ("default" in schema) return schema.default;
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  const choices = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (Array.isArray(choices)) return choices.map(sampleOf).find((value) => value !== undefined);
  switch (schema.type) {
    case "object":
      return sampleObject(schema);
    case "array":
      return Array.from({ length: Number(schema.minItems ?? 0) }, () => sampleOf((schema.items ?? {}) as Schema));
    case "string":
      return "example".padEnd(Number(schema.minLength ?? 0), "e").slice(0, Number(schema.maxLength ?? Infinity));
    case "integer":
    case "number":
      return sampleNumber(schema);
    case "boolean":
      return false;
    case "null":
      return null;
    default:
      return undefined;
  }
}

function sampleObject(schema: Schema): Record<string, unknown> | undefined {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const value: Record<string, unknown> = {};
  for (const name of (schema.required ?? []) as string[]) {
    const property = properties[name];
    const sample = property ? sampleOf(property) : undefined;
    if (sample === undefined) return undefined;
    value[name] = sample;
  }
  return value;
}

function sampleNumber(schema: Schema): number {
  const { minimum, exclusiveMinimum, maximum } = schema;
  const low = typeof exclusiveMinimum === "number" ? exclusiveMinimum + 1 : typeof minimum === "number" ? minimum : 0;
  const value = schema.type === "integer" ? Math.ceil(low) : low;
  return typeof maximum === "number" ? Math.min(value, maximum) : value;
}
