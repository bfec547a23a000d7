import { describe, expect, test } from "bun:test";
import { InTurn } from "../../src/lib/in-turn.ts";

describe("InTurn: results delivered in the order their work began", () => {
  test("a later work that finishes first is delivered after the earlier one", async () => {
    const turns = new InTurn();
    const delivered: string[] = [];
    const first = Promise.withResolvers<string>();
    const second = Promise.withResolvers<string>();
    const done = [
      turns.run(first.promise, (v) => delivered.push(v)),
      turns.run(second.promise, (v) => delivered.push(v)),
    ];
    second.resolve("second");
    await Bun.sleep(1);
    expect(delivered).toEqual([]);
    first.resolve("first");
    await Promise.all(done);
    expect(delivered).toEqual(["first", "second"]);
  });

  test("a failed work rejects its own turn, delivers nothing and holds up no later one", async () => {
    const turns = new InTurn();
    const delivered: string[] = [];
    const first = Promise.withResolvers<string>();
    const failed = turns.run(first.promise, (v) => delivered.push(v));
    const later = turns.run(Promise.resolve("later"), (v) => delivered.push(v));
    first.reject(new Error("read failed"));
    await expect(failed).rejects.toThrow("read failed");
    await later;
    expect(delivered).toEqual(["later"]);
  });

  test("a delivery that throws rejects its own turn only", async () => {
    const turns = new InTurn();
    const delivered: string[] = [];
    const throwing = turns.run(Promise.resolve(1), () => {
      throw new Error("listener broke");
    });
    const next = turns.run(Promise.resolve(2), (v) => delivered.push(String(v)));
    await expect(throwing).rejects.toThrow("listener broke");
    await next;
    expect(delivered).toEqual(["2"]);
  });
});
