import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { fieldsOf, fileProblemsOf, problemsOf, unitOf } from "../../src/console/fields.ts";

// As the contract endpoint answers it: TypeBox's JSON Schema.
const schema = JSON.parse(
  JSON.stringify(
    Type.Object({
      title: Type.String({ minLength: 3, maxLength: 10 }),
      code: Type.Optional(Type.String({ pattern: "^[A-Z]{2}$" })),
      count: Type.Integer({ minimum: 1, maximum: 5 }),
      timeoutMs: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
      colour: Type.Union([Type.Literal("red"), Type.Literal("green")]),
      meta: Type.Optional(Type.Record(Type.String(), Type.Number())),
      lines: Type.Array(Type.Object({ qty: Type.Integer({ minimum: 1 }) })),
      ship: Type.Optional(Type.Object({ city: Type.String({ minLength: 1 }) })),
    }),
  ),
);
const fields = fieldsOf(schema);
const good = { title: "abc", count: "2", colour: "red", lines: [{ qty: "1" }] };

describe("the invoke form's checks, before anything is sent", () => {
  test("values the schema takes pass; optional fields left empty are not checked", () => {
    expect(problemsOf(fields, good)).toEqual({});
    expect(problemsOf(fields, { ...good, code: "", timeoutMs: "", ship: { city: "" } })).toEqual({});
  });

  test("each broken rule is named by its field's path, nested and listed ones too", () => {
    expect(
      problemsOf(
        fields,
        {
          title: "ab",
          code: "abc",
          count: "9",
          timeoutMs: "0",
          colour: "",
          meta: "{oops",
          lines: [{ qty: "1" }, { qty: "0" }],
          // An optional group nothing was typed into is left out, so its fields are not checked.
          ship: { city: "" },
        },
        ["input"],
      ),
    ).toEqual({
      "input-title": "At least 3 characters.",
      "input-code": "Must match ^[A-Z]{2}$.",
      "input-count": "At most 5.",
      "input-timeoutMs": "More than 0 ms.",
      "input-colour": "Choose one.",
      "input-meta": expect.stringMatching(/^Not JSON: /),
      "input-lines-1-qty": "At least 1.",
    });
  });

  test("missing, too long, not a number, not whole", () => {
    expect(problemsOf(fields, { ...good, title: "", count: "" })).toEqual({ title: "Required.", count: "Required." });
    expect(problemsOf(fields, { ...good, title: "x".repeat(11) })).toEqual({
      title: "At most 10 characters (11 now).",
    });
    // Characters, not UTF-16 units: three emoji are three characters.
    expect(problemsOf(fields, { ...good, title: "😀😀😀" })).toEqual({});
    expect(problemsOf(fields, { ...good, count: "two" })).toEqual({ count: "Not a number." });
    expect(problemsOf(fields, { ...good, count: "2.5" })).toEqual({ count: "A whole number." });
    expect(problemsOf(fields, { ...good, ship: { city: "" }, code: "AB" })).toEqual({});
    expect(problemsOf(fields, { ...good, ship: { city: "" }, meta: "{}" })).toEqual({});
  });

  test("numeric fields get the unit their name says", () => {
    expect(fields.find((f) => f.name === "timeoutMs")?.unit).toBe("ms");
    expect(fields.find((f) => f.name === "count")?.unit).toBeUndefined();
    expect(["delayMs", "waitSeconds", "ttlS", "maxBytes", "ms", "items", "bytes"].map(unitOf)).toEqual([
      "ms",
      "s",
      "s",
      "bytes",
      undefined,
      undefined,
      undefined,
    ]);
  });

  test("files: a required one missing, one too large, one of a type the contract refuses", () => {
    const picture = { field: "picture", required: true, maxBytes: 1000, contentTypes: ["image/*", "application/pdf"] };
    const notes = { field: "notes", required: false, maxBytes: null, contentTypes: [] };
    expect(fileProblemsOf([picture, notes], {})).toEqual({ picture: "Choose a file." });
    expect(fileProblemsOf([picture], { picture: { size: 1001, type: "image/png" } })).toEqual({
      picture: "Too large: 1001 bytes, at most 1000.",
    });
    expect(fileProblemsOf([picture], { picture: { size: 10, type: "text/plain" } })).toEqual({
      picture: "Of type text/plain; must be image/* or application/pdf.",
    });
    expect(
      fileProblemsOf([picture, notes], {
        picture: { size: 10, type: "application/pdf; x=1" },
        notes: { size: 1e9, type: "" },
      }),
    ).toEqual({});
  });
});
