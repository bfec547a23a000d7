import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { fieldsOf, inputOf } from "../src/console/fields.ts";

// The schemas as the contract endpoint answers them: TypeBox's JSON Schema.
const schema = JSON.parse(
  JSON.stringify(
    Type.Object({
      title: Type.String({ description: "what it is called" }),
      count: Type.Integer(),
      ratio: Type.Optional(Type.Number()),
      done: Type.Boolean(),
      urgent: Type.Optional(Type.Boolean()),
      colour: Type.Union([Type.Literal("red"), Type.Literal("green")]),
      size: Type.Optional(Type.Enum({ small: "s", large: "l" })),
      tags: Type.Array(Type.String()),
    }),
  ),
);

describe("the console's form generated from an input schema", () => {
  test("each property becomes a field of its kind, optional ones marked", () => {
    expect(fieldsOf(schema)).toEqual([
      { name: "title", required: true, kind: "string", description: "what it is called" },
      { name: "count", required: true, kind: "integer", description: undefined },
      { name: "ratio", required: false, kind: "number", description: undefined },
      { name: "done", required: true, kind: "boolean", description: undefined },
      { name: "urgent", required: false, kind: "boolean", description: undefined },
      { name: "colour", required: true, kind: "enum", options: ["red", "green"], description: undefined },
      { name: "size", required: false, kind: "enum", options: ["s", "l"], description: undefined },
      { name: "tags", required: true, kind: "json", description: undefined },
    ]);
  });

  test("typed values become the input; empty optional fields are left out", () => {
    const fields = fieldsOf(schema);
    expect(
      inputOf(fields, { title: "x", count: "2", done: true, colour: "red", tags: '["a"]', ratio: "", size: "" }),
    ).toEqual({ title: "x", count: 2, done: true, colour: "red", tags: ["a"] });
    // An unticked required box is false; an untouched optional one is left out.
    expect(
      inputOf(fields, { title: "x", count: "0", colour: "green", tags: "[]", ratio: "0.5", urgent: false }),
    ).toEqual({
      title: "x",
      count: 0,
      done: false,
      urgent: false,
      colour: "green",
      tags: [],
      ratio: 0.5,
    });
    expect(() => inputOf(fields, { tags: "[not json" })).toThrow();
  });
});
