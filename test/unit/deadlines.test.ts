import { describe, expect, test } from "bun:test";
import { Deadlines } from "../../src/engine/deadlines.ts";

describe("Deadlines: waits bounded by one timer per wait length", () => {
  test("a promise that settles in time gives its value, or its error, and leaves no wait behind", async () => {
    const deadlines = new Deadlines();
    const ok = Promise.withResolvers<string>();
    const bad = Promise.withResolvers<string>();
    const okWait = deadlines.within(ok.promise, 60_000);
    const badWait = deadlines.within(bad.promise, 60_000);
    expect(deadlines.pending).toBe(2);
    ok.resolve("done");
    bad.reject(new Error("broke"));
    expect(await okWait).toBe("done");
    await expect(badWait).rejects.toThrow("broke");
    expect(deadlines.pending).toBe(0);
  });

  test("a wait past its length ends undefined while the promise keeps running; later waits end at their own time", async () => {
    const deadlines = new Deadlines();
    const never = Promise.withResolvers<string>();
    const started = performance.now();
    const first = deadlines.within(never.promise, 30);
    // Added later with the same length: in the same queue, behind the first, due later.
    await Bun.sleep(20);
    const second = deadlines.within(never.promise, 30);
    expect(await first).toBeUndefined();
    const firstEnded = performance.now() - started;
    expect(firstEnded).toBeGreaterThanOrEqual(29);
    expect(deadlines.pending).toBe(1);
    expect(await second).toBeUndefined();
    expect(performance.now() - started).toBeGreaterThanOrEqual(49);
    expect(deadlines.pending).toBe(0);
  });

  test("waits that ended in any order do not disturb the others: the middle, the oldest and the newest", async () => {
    const deadlines = new Deadlines();
    const parts = Array.from({ length: 5 }, () => Promise.withResolvers<number>());
    const waits = parts.map((part) => deadlines.within(part.promise, 40));
    parts[2]?.resolve(2);
    parts[0]?.resolve(0);
    parts[4]?.resolve(4);
    expect(await waits[2]).toBe(2);
    expect(await waits[0]).toBe(0);
    expect(await waits[4]).toBe(4);
    expect(deadlines.pending).toBe(2);
    // The two left run out together (their timer was set for the oldest, which ended early).
    expect(await Promise.all([waits[1], waits[3]])).toEqual([undefined, undefined]);
    expect(deadlines.pending).toBe(0);
    // A promise settling after its wait ran out changes nothing.
    parts[1]?.resolve(1);
    await parts[1]?.promise;
    expect(deadlines.pending).toBe(0);
  });

  test("different lengths keep their own order: a short wait added after a long one ends first", async () => {
    const deadlines = new Deadlines();
    const never = new Promise<string>(() => {});
    const ended: string[] = [];
    const long = deadlines.within(never, 80).then(() => ended.push("long"));
    const short = deadlines.within(never, 10).then(() => ended.push("short"));
    const zero = deadlines.within(never, -5).then(() => ended.push("zero"));
    await Promise.all([long, short, zero]);
    expect(ended).toEqual(["zero", "short", "long"]);
  });

  test("a length that is not a number waits not at all; one past a timer's range still waits", async () => {
    const deadlines = new Deadlines();
    const never = new Promise<string>(() => {});
    expect(await deadlines.within(never, Number.NaN)).toBeUndefined();
    const settle = Promise.withResolvers<string>();
    const long = deadlines.within(settle.promise, Number.POSITIVE_INFINITY);
    await Bun.sleep(20);
    expect(deadlines.pending).toBe(1);
    settle.resolve("at last");
    expect(await long).toBe("at last");
    expect(deadlines.pending).toBe(0);
  });

  test("a queue emptied by its timer starts again with the next wait", async () => {
    const deadlines = new Deadlines();
    const never = new Promise<string>(() => {});
    expect(await deadlines.within(never, 5)).toBeUndefined();
    expect(await deadlines.within(Promise.resolve("again"), 5)).toBe("again");
    expect(await deadlines.within(never, 5)).toBeUndefined();
    expect(deadlines.pending).toBe(0);
  });
});
