import { describe, expect, test } from "bun:test";
import { findUnsupportedCharacter, storableJson } from "../../src/lib/json-text.ts";

describe("findUnsupportedCharacter", () => {
  test("names the first string or key holding U+0000 or a lone surrogate by its JSON pointer", () => {
    expect(findUnsupportedCharacter({ a: "ok", b: [1, { "c/d~e": ["x", "bad\u0000"] }] }, "/input")).toBe(
      "/input/b/1/c~1d~0e/1",
    );
    expect(findUnsupportedCharacter({ ok: 1, "k\uD800": 1 })).toBe("/k\uD800");
    expect(findUnsupportedCharacter(["\uDC00"])).toBe("/0");
    expect(findUnsupportedCharacter("\u0000", "/x")).toBe("/x");
  });

  test("answers null for values that can be stored, surrogate pairs included", () => {
    expect(findUnsupportedCharacter({ a: ["😀", { b: null, c: 1.5, d: true }], "": "" })).toBeNull();
    expect(findUnsupportedCharacter(Object.create({ inherited: "\u0000" }))).toBeNull();
  });

  test("storableJson refuses an output holding one, naming where", () => {
    expect(storableJson({ list: ["a", "\u0000"] }, "/output")).toEqual({
      problem: "holds U+0000 or a lone surrogate at /output/list/1, which cannot be stored",
    });
    expect(storableJson({ at: new Date(0), gone: undefined }, "/output")).toEqual({
      value: { at: "1970-01-01T00:00:00.000Z" },
    });
  });

  test("storableJson refuses a value over maxBytes as UTF-8 JSON, not as characters", () => {
    const tooLarge = { problem: "is larger than 100 bytes as JSON, the most an output may hold" };
    // {"t":"…"} is 8 bytes around the text.
    expect(storableJson({ t: "a".repeat(92) }, "", 100)).toEqual({ value: { t: "a".repeat(92) } });
    expect(storableJson({ t: "a".repeat(93) }, "", 100)).toEqual(tooLarge);
    expect(storableJson({ t: "é".repeat(46) }, "", 100)).toEqual({ value: { t: "é".repeat(46) } });
    expect(storableJson({ t: "é".repeat(47) }, "", 100)).toEqual(tooLarge);
    expect(storableJson({ t: "😀".repeat(23) }, "", 100)).toEqual({ value: { t: "😀".repeat(23) } });
    expect(storableJson({ t: "😀".repeat(24) }, "", 100)).toEqual(tooLarge);
  });
});
