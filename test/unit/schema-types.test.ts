import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { schemaType } from "../../src/lib/schema-types.ts";

const flat = (schema: unknown) => schemaType(JSON.parse(JSON.stringify(schema))).replace(/\s+/g, " ");

describe("TypeScript types of contract schemas", () => {
  test("what TypeBox writes becomes the type a handler sees", () => {
    expect(flat(Type.Object({ a: Type.String(), b: Type.Optional(Type.Integer()) }))).toBe(
      "{ a: string; b?: number; }",
    );
    expect(flat(Type.Union([Type.Literal("x"), Type.Literal(2), Type.Null()]))).toBe('"x" | 2 | null');
    expect(flat(Type.Array(Type.Union([Type.String(), Type.Number()])))).toBe("(string | number)[]");
    expect(flat(Type.Tuple([Type.String(), Type.Boolean()]))).toBe("[string, boolean]");
    expect(flat(Type.Record(Type.String(), Type.Number()))).toBe("{ [key: string]: number; }");
    expect(flat(Type.Object({ "odd-name": Type.Any() }))).toBe('{ "odd-name": unknown; }');
    expect(flat(Type.Object({}, { additionalProperties: false }))).toBe("Record<string, never>");
    expect(flat({ type: ["string", "null"] })).toBe("string | null");
    expect(flat({ enum: ["a", "b"] })).toBe('"a" | "b"');
    expect(flat({ not: {} })).toBe("unknown");
  });
});
