import { isObject } from "./values.ts";

type Schema = Record<string, unknown>;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const key = (name: string) => (IDENTIFIER.test(name) ? name : JSON.stringify(name));

/**
 * A TypeScript type for a JSON Schema, as far as the contracts use it (what TypeBox writes): objects
 * with required and optional properties, records, arrays and tuples, unions, literals and enums,
 * strings, numbers, booleans, null. Anything else is `unknown`, never a wrong type.
 */
export function schemaType(schema: unknown, indent = ""): string {
  if (!isObject(schema)) return "unknown";
  if ("const" in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(" | ") || "never";
  const union = (schema.anyOf ?? schema.oneOf) as unknown[] | undefined;
  if (Array.isArray(union)) return union.map((s) => wrap(schemaType(s, indent))).join(" | ") || "never";
  if (Array.isArray(schema.allOf)) return schema.allOf.map((s) => wrap(schemaType(s, indent))).join(" & ") || "unknown";
  if (Array.isArray(schema.type)) {
    return schema.type.map((type) => wrap(schemaType({ ...schema, type }, indent))).join(" | ");
  }
  switch (schema.type) {
    case "string":
      return "string";
    case "number":
    case "integer":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array":
      return arrayType(schema, indent);
    case "object":
      return objectType(schema, indent);
    default:
      return "unknown";
  }
}

function arrayType(schema: Schema, indent: string): string {
  const tuple = (schema.prefixItems ?? (Array.isArray(schema.items) ? schema.items : undefined)) as
    | unknown[]
    | undefined;
  if (Array.isArray(tuple)) return `[${tuple.map((s) => schemaType(s, indent)).join(", ")}]`;
  return `${wrap(schemaType(schema.items, indent))}[]`;
}

function objectType(schema: Schema, indent: string): string {
  const properties = isObject(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const inner = `${indent}  `;
  const lines = Object.entries(properties).map(
    ([name, property]) => `${inner}${key(name)}${required.has(name) ? "" : "?"}: ${schemaType(property, inner)};`,
  );
  const rest = isObject(schema.patternProperties)
    ? Object.values(schema.patternProperties)[0]
    : isObject(schema.additionalProperties)
      ? schema.additionalProperties
      : undefined;
  if (rest !== undefined) lines.push(`${inner}[key: string]: ${schemaType(rest, inner)};`);
  if (lines.length === 0)
    return schema.additionalProperties === false ? "Record<string, never>" : "Record<string, unknown>";
  return `{\n${lines.join("\n")}\n${indent}}`;
}

const wrap = (type: string) => (/[|&]/.test(type) && !type.startsWith("{") ? `(${type})` : type);
