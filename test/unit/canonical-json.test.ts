import { describe, expect, test } from "bun:test";
import { canonicalJson } from "../../src/lib/canonical-json.ts";

// Stored input fingerprints are hashes of canonicalJson: it must keep writing exactly what JSON.stringify
// writes with sorted keys (the definition it had), or a replay after an upgrade would be a conflict.
const byDefinition = (value: unknown) =>
  JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, (v as Record<string, unknown>)[k]]),
    );
  });

const KEYS = [
  "a",
  "b",
  "Z",
  "é",
  "10",
  "2",
  "01",
  "4294967295",
  "4294967294",
  "",
  "a b",
  "\u0001",
  '"q"',
  "__proto__x",
  "ü",
];

function randomValue(depth: number): unknown {
  const pick = Math.floor(Math.random() * (depth > 3 ? 6 : 9));
  switch (pick) {
    case 0:
      return null;
    case 1:
      return Math.random() < 0.5;
    case 2:
      return [0, -0, 1.5, -3e21, 1e-7, 42, Number.MAX_SAFE_INTEGER][Math.floor(Math.random() * 7)];
    case 3:
      return ["", "x", 'quote " and \\ slash', "line\nbreak", "😀", "\u2028", "tab\t"][Math.floor(Math.random() * 7)];
    case 4:
      return undefined;
    case 5:
      return new Date(Math.floor(Math.random() * 2e12));
    case 6:
    case 7: {
      const record: Record<string, unknown> = {};
      for (let i = Math.floor(Math.random() * 6); i > 0; i--) {
        record[KEYS[Math.floor(Math.random() * KEYS.length)] as string] = randomValue(depth + 1);
      }
      return record;
    }
    default:
      return Array.from({ length: Math.floor(Math.random() * 5) }, () => randomValue(depth + 1));
  }
}

describe("canonicalJson", () => {
  test("writes what JSON.stringify writes with every object's keys sorted, for 5 000 random values", () => {
    for (let i = 0; i < 5_000; i++) {
      const value = { action: "a.b", input: randomValue(0), files: {} };
      expect(canonicalJson(value)).toBe(byDefinition(value) as string);
    }
  });

  test("equal values with keys in another order write alike; a fingerprint's known text", () => {
    expect(canonicalJson({ b: [{ y: 1, x: undefined, w: () => 1 }], a: "é" })).toBe('{"a":"é","b":[{"y":1}]}');
    expect(canonicalJson({ a: 1, b: { c: 2, d: [3] } })).toBe(canonicalJson({ b: { d: [3], c: 2 }, a: 1 }));
    expect(canonicalJson([undefined, () => 1])).toBe("[null,null]");
  });
});

/** The same value with every plain object's keys inserted in sorted order: what canonicalJson writes natively. */
function sortedCopy(value: unknown): unknown {
  if (value === null || typeof value !== "object" || value instanceof Date) return value;
  if (Array.isArray(value)) return value.map(sortedCopy);
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) copy[key] = sortedCopy((value as Record<string, unknown>)[key]);
  return copy;
}

describe("canonicalJson of values whose keys are in order already (JSON.stringify writes them)", () => {
  test("writes what the definition writes, for 5 000 random values", () => {
    for (let i = 0; i < 5_000; i++) {
      const value = sortedCopy({ action: "a.b", files: {}, input: randomValue(0) });
      expect(canonicalJson(value)).toBe(byDefinition(value) as string);
    }
  });

  test("what JSON.stringify would write otherwise stays the definition's: boxed values, toJSON, index keys", () => {
    // JSON.stringify unwraps a boxed number; the definition writes the object it is.
    const boxed = { a: new Number(5) };
    expect(canonicalJson(boxed)).toBe(byDefinition(boxed) as string);
    expect(canonicalJson(boxed)).toBe('{"a":{}}');
    const withToJson = { a: { toJSON: () => ({ z: 1, y: 2 }) } };
    expect(canonicalJson(withToJson)).toBe('{"a":{"y":2,"z":1}}');
    const listWithToJson = Object.assign([1], { toJSON: () => ({ b: 1, a: 2 }) });
    expect(canonicalJson({ l: listWithToJson })).toBe('{"l":{"a":2,"b":1}}');
    const indexes = { "10": 1, "2": 2, a: 3 };
    expect(canonicalJson(indexes)).toBe(byDefinition(indexes) as string);
    const inherited = Object.assign(Object.create({ b: 1 }), { a: 2 });
    expect(canonicalJson(inherited)).toBe(byDefinition(inherited) as string);
  });
});
