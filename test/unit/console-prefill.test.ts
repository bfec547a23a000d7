import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { fieldsOf, inputOf } from "../../src/console/fields.ts";
import { valuesOf } from "../../src/console/prefill.ts";

// The schema as the contract endpoint answers it: TypeBox's JSON Schema.
const fields = fieldsOf(
  JSON.parse(
    JSON.stringify(
      Type.Object({
        title: Type.String(),
        count: Type.Integer(),
        ratio: Type.Optional(Type.Number()),
        done: Type.Boolean(),
        colour: Type.Union([Type.Literal("red"), Type.Literal("green")]),
        tags: Type.Array(Type.String()),
        meta: Type.Optional(Type.Object({ at: Type.String() })),
        lines: Type.Optional(Type.Array(Type.Object({ sku: Type.String(), qty: Type.Integer() }))),
        extra: Type.Optional(Type.Record(Type.String(), Type.Number())),
      }),
    ),
  ),
);

describe("run again: an execution's input fills the generated form", () => {
  test("the values the form gets stand for the same input again", () => {
    const input = {
      title: "a",
      count: 3,
      ratio: 0.5,
      done: true,
      colour: "green",
      tags: ["x"],
      meta: { at: "b" },
      lines: [
        { sku: "s1", qty: 2 },
        { sku: "s2", qty: 5 },
      ],
      extra: { k: 1 },
    };
    const values = valuesOf(fields, input);
    expect(values).toMatchObject({
      title: "a",
      count: "3",
      ratio: "0.5",
      done: true,
      colour: "green",
      tags: ["x"],
      meta: { at: "b" },
      lines: [
        { sku: "s1", qty: "2" },
        { sku: "s2", qty: "5" },
      ],
    });
    expect(inputOf(fields, values)).toEqual(input);
  });

  test("what the form cannot show is left for the person: unknown properties, values of another type", () => {
    const values = valuesOf(fields, { title: 7, count: "3", colour: "blue", gone: 1, done: false });
    expect(values).toEqual({ done: false });
    expect(valuesOf(fields, null)).toEqual({});
    expect(valuesOf(fields, ["title"])).toEqual({});
  });
});
