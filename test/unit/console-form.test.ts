import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { browseQuery, cellText, parseQuery } from "../../src/console/data-query.ts";
import { acceptOf, fieldsOf, fileLimitsOf, inputOf } from "../../src/console/fields.ts";

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
      {
        name: "tags",
        required: true,
        kind: "array",
        item: { name: "item", required: true, kind: "string", description: undefined },
        description: undefined,
      },
    ]);
  });

  test("typed values become the input; empty optional fields are left out", () => {
    const fields = fieldsOf(schema);
    expect(
      inputOf(fields, { title: "x", count: "2", done: true, colour: "red", tags: ["a"], ratio: "", size: "" }),
    ).toEqual({ title: "x", count: 2, done: true, colour: "red", tags: ["a"] });
    // An unticked required box is false; an untouched optional one is left out.
    expect(inputOf(fields, { title: "x", count: "0", colour: "green", tags: [], ratio: "0.5", urgent: false })).toEqual(
      {
        title: "x",
        count: 0,
        done: false,
        urgent: false,
        colour: "green",
        tags: [],
        ratio: 0.5,
      },
    );
  });

  const nested = JSON.parse(
    JSON.stringify(
      Type.Object({
        shipTo: Type.Object({ name: Type.String(), city: Type.Optional(Type.String()) }),
        note: Type.Optional(Type.Object({ text: Type.String() })),
        lines: Type.Array(
          Type.Object({ sku: Type.String(), qty: Type.Integer(), gift: Type.Optional(Type.Boolean()) }),
        ),
        extra: Type.Record(Type.String(), Type.Number()),
        either: Type.Union([Type.String(), Type.Number()]),
      }),
    ),
  );

  test("nested objects are groups of fields and arrays lists of items; what has no form is JSON", () => {
    const [shipTo, note, lines, extra, either] = fieldsOf(nested);
    expect(shipTo).toMatchObject({ kind: "object", required: true });
    expect(shipTo?.kind === "object" && shipTo.fields.map((f) => [f.name, f.kind, f.required])).toEqual([
      ["name", "string", true],
      ["city", "string", false],
    ]);
    expect(note).toMatchObject({ kind: "object", required: false });
    expect(lines?.kind === "array" && lines.item.kind === "object" && lines.item.fields.map((f) => f.kind)).toEqual([
      "string",
      "integer",
      "boolean",
    ]);
    expect([extra?.kind, either?.kind]).toEqual(["json", "json"]);
  });

  test("groups and lists become nested input; an untouched optional group is left out, JSON is parsed", () => {
    const fields = fieldsOf(nested);
    expect(
      inputOf(fields, {
        shipTo: { name: "Ana", city: "" },
        note: { text: "" },
        lines: [
          { sku: "a", qty: "2", gift: true },
          { sku: "b", qty: "1" },
        ],
        extra: '{"k": 1}',
        either: "3",
      }),
    ).toEqual({
      shipTo: { name: "Ana" },
      lines: [
        { sku: "a", qty: 2, gift: true },
        { sku: "b", qty: 1 },
      ],
      extra: { k: 1 },
      either: 3,
    });
    // A required group and list stand even when empty: the server names what they lack.
    expect(inputOf(fields, {})).toEqual({ shipTo: { name: "" }, lines: [] });
    expect(() => inputOf(fields, { extra: "[not json" })).toThrow();
  });
});

describe("the form's file pickers", () => {
  test("accept the contract's types and name its limits", () => {
    const picture = {
      field: "picture",
      required: true,
      maxBytes: 5_000_000,
      contentTypes: ["image/png", "image/jpeg"],
    };
    expect(acceptOf(picture)).toBe("image/png,image/jpeg");
    expect(fileLimitsOf(picture)).toBe("image/png or image/jpeg, up to 4.8 MiB");
    const any = { field: "extra", required: false, maxBytes: null, contentTypes: [] };
    expect(acceptOf(any)).toBe("");
    expect(fileLimitsOf(any)).toBe("any type");
    expect(fileLimitsOf({ ...any, maxBytes: 2048 })).toBe("any type, up to 2 KiB");
  });
});

describe("the data page's queries", () => {
  test("a table page: limit always, where and order when given", () => {
    const base = { where: "", orderBy: "", direction: "asc" as const, limit: 50 };
    expect(browseQuery("notes", base)).toEqual({ notes: { $: { limit: 50 } } });
    expect(
      browseQuery("notes", { where: ' {"done": false} ', orderBy: "priority", direction: "desc", limit: 5 }),
    ).toEqual({ notes: { $: { limit: 5, where: { done: false }, order: { priority: "desc" } } } });
    expect(() => browseQuery("notes", { ...base, where: "{done: false" })).toThrow(SyntaxError);
    expect(() => browseQuery("notes", { ...base, where: "[1]" })).toThrow("where must be a JSON object");
  });

  test("the playground takes a JSON object; cells show strings as they are and the rest as JSON", () => {
    expect(parseQuery('{"notes": {}}')).toEqual({ notes: {} });
    expect(() => parseQuery('"notes"')).toThrow("a query is a JSON object");
    expect(() => parseQuery("null")).toThrow("a query is a JSON object");
    expect([cellText("a"), cellText(2), cellText(false), cellText(["x"]), cellText(undefined), cellText(null)]).toEqual(
      ["a", "2", "false", '["x"]', "", ""],
    );
  });
});
