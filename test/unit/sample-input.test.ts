import { describe, expect, test } from "bun:test";
import type { TObject } from "@sinclair/typebox";
import { sampleCall } from "../../src/cli/sample-input.ts";
import { compileContract } from "../../src/release/contract.ts";
import { FileInput, Type } from "../../src/sdk/index.ts";
import type { ActionKind } from "../../src/store/statuses.ts";

const action = (name: string, input: TObject, kind: ActionKind = "function") =>
  compileContract({ name, kind, description: name, input, output: Type.Object({}), access: "authenticated" });

describe("the dev server's sample call", () => {
  test("skips an action with a required file and answers an input the next action's contract accepts", () => {
    const sample = sampleCall([
      action("docs.attach", Type.Object({ note: Type.String(), file: FileInput() })),
      action(
        "shop.order",
        Type.Object({
          title: Type.String({ minLength: 10, maxLength: 12 }),
          count: Type.Integer({ minimum: 2.5, maximum: 9 }),
          price: Type.Number({ exclusiveMinimum: 0 }),
          size: Type.Union([Type.Literal("s"), Type.Literal("m")]),
          tags: Type.Array(Type.String(), { minItems: 1 }),
          gift: Type.Boolean(),
          note: Type.Optional(Type.String({ format: "email" })),
        }),
      ),
    ]);
    expect(sample).toEqual({
      action: "shop.order",
      input: { title: "exampleeee", count: 3, price: 1, size: "s", tags: ["example"], gift: false },
    });
  });

  test("an optional file does not rule an action out; functions come before workflows", () => {
    const sample = sampleCall([
      action("notes.later", Type.Object({}), "workflow"),
      action("docs.note", Type.Object({ text: Type.String({ default: "hi" }), file: Type.Optional(FileInput()) })),
    ]);
    expect(sample).toEqual({ action: "docs.note", input: { text: "hi" } });
  });

  test("null when no action's input can be made up, instead of a guess that would be refused", () => {
    const sample = sampleCall([
      action("docs.attach", Type.Object({ file: FileInput() })),
      action("users.invite", Type.Object({ email: Type.String({ pattern: "^[^@]+@[^@]+$" }) })),
      action("odd.one", Type.Object({ when: Type.Never() })),
    ]);
    expect(sample).toBeNull();
  });
});
