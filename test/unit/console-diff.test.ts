import { describe, expect, test } from "bun:test";
import { type TSchema, Type } from "@sinclair/typebox";
import { diffReleases } from "../../src/console/contract-diff.ts";
import { compileContract } from "../../src/release/contract.ts";
import { FileInput } from "../../src/sdk/index.ts";

/** A contract as a release publishes it (the same compiler, so the same hashes and schemas). */
const contract = (
  name: string,
  input: TSchema,
  options: { access?: "authenticated" | "service"; description?: string; output?: TSchema } = {},
) =>
  compileContract({
    name,
    kind: "function",
    description: options.description ?? "does a thing",
    input,
    output: options.output ?? Type.Object({ ok: Type.Boolean() }),
    access: options.access ?? "authenticated",
  }).contract;

describe("the console's diff of two releases' contracts", () => {
  test("actions added, removed, changed (schema properties, requiredness, access, description, files) and unchanged", () => {
    const v1 = [
      contract("shop.order", Type.Object({ item: Type.String(), quantity: Type.Optional(Type.Integer()) })),
      contract("shop.cancel", Type.Object({ orderId: Type.String() })),
      contract("shop.same", Type.Object({})),
      contract("shop.note", Type.Object({ text: Type.String() }), { description: "old words" }),
      contract("shop.photo", Type.Object({ picture: FileInput({ maxBytes: 10 }) })),
    ];
    const v2 = [
      contract(
        "shop.order",
        Type.Object({ item: Type.String({ minLength: 1 }), quantity: Type.Integer(), gift: Type.Boolean() }),
        { access: "service" },
      ),
      contract("shop.refund", Type.Object({ orderId: Type.String() })),
      contract("shop.same", Type.Object({})),
      contract("shop.note", Type.Object({ text: Type.String() }), { description: "new words" }),
      contract("shop.photo", Type.Object({ picture: FileInput({ maxBytes: 20 }) })),
    ];
    const diff = diffReleases(v1, v2);
    expect(diff.added.map((a) => a.name)).toEqual(["shop.refund"]);
    expect(diff.removed.map((a) => a.name)).toEqual(["shop.cancel"]);
    expect(diff.unchanged).toEqual(["shop.same"]);
    expect(diff.changed.map((c) => c.name)).toEqual(["shop.note", "shop.order", "shop.photo"]);
    const order = diff.changed.find((c) => c.name === "shop.order")?.changes ?? [];
    expect(order).toEqual([
      { part: "access", text: '"authenticated" → "service"' },
      { part: "input", where: "item", text: '{"type":"string"} → {"minLength":1,"type":"string"}' },
      { part: "input", where: "quantity", text: "now required" },
      { part: "input", where: "gift", text: 'added (required): {"type":"boolean"}' },
    ]);
    expect(diff.changed.find((c) => c.name === "shop.note")?.changes).toEqual([
      { part: "description", text: '"old words" → "new words"' },
    ]);
    expect(diff.changed.find((c) => c.name === "shop.photo")?.changes).toEqual([
      { part: "files", where: "picture", text: "maxBytes 10 → 20" },
    ]);
  });

  test("the same release against itself has nothing to say", () => {
    const v = [contract("a.b", Type.Object({ x: Type.Array(Type.String()) }))];
    expect(diffReleases(v, v)).toEqual({ added: [], removed: [], changed: [], unchanged: ["a.b"] });
  });
});
