import { describe, expect, test } from "bun:test";
import { redactorFor, redactText } from "../../src/engine/redaction.ts";
import { NO_VARIABLES, type VariableSnapshot } from "../../src/engine/variable-snapshot.ts";

const snapshot = (secrets: Record<string, string>): VariableSnapshot => ({
  env: { ...secrets },
  secrets: Object.entries(secrets).map(([name, value]) => ({ name, value })),
});

const STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
const redactor = redactorFor(snapshot({ STRIPE_KEY: STRIPE, TOKEN: "tok-12345678" }));
if (!redactor) throw new Error("a snapshot with secrets has a redactor");

describe("redactorFor", () => {
  test("none without secrets: the invoke path does nothing more", () => {
    expect(redactorFor(NO_VARIABLES)).toBeNull();
    expect(redactorFor({ env: { REGION: "eu" }, secrets: [] })).toBeNull();
    expect(redactText(null, STRIPE)).toBe(STRIPE);
  });

  test("built once per snapshot, not per call", () => {
    const one = snapshot({ A_SECRET: "aaaaaaaaaa" });
    expect(redactorFor(one)).toBe(redactorFor(one) as never);
    expect(redactorFor(snapshot({ A_SECRET: "aaaaaaaaaa" }))).not.toBe(redactorFor(one) as never);
  });
});

describe("text", () => {
  test("every occurrence, alone, embedded, twice", () => {
    expect(redactor.text(STRIPE)).toBe("[secret STRIPE_KEY]");
    expect(redactor.text(`key=${STRIPE};`)).toBe("key=[secret STRIPE_KEY];");
    expect(redactor.text(`${STRIPE}${STRIPE} and tok-12345678`)).toBe(
      "[secret STRIPE_KEY][secret STRIPE_KEY] and [secret TOKEN]",
    );
  });

  test("the same string when nothing occurs (and a prefix of a secret is not it)", () => {
    const text = `nothing here but sk_live_4eC39 and tok-1234567`;
    expect(redactor.text(text)).toBe(text);
    expect(redactor.text("")).toBe("");
  });

  test("a secret holding another is replaced whole, whichever order they were given in", () => {
    const inner = "abcdefgh";
    const outer = `xx${inner}yy`;
    for (const order of [
      { INNER: inner, OUTER: outer },
      { OUTER: outer, INNER: inner },
    ]) {
      const r = redactorFor(snapshot(order));
      expect(r?.text(`${outer} ${inner}`)).toBe("[secret OUTER] [secret INNER]");
    }
  });

  test("characters special to regular expressions are taken literally", () => {
    const odd = "a.b*c+d?e^f$g{h}i(j)k|l[m]n\\o/p-q";
    const r = redactorFor(snapshot({ ODD: odd }));
    expect(r?.text(`<${odd}>`)).toBe("<[secret ODD]>");
    expect(r?.text("aXb*c+d?e^f$g{h}i(j)k|l[m]n\\o/p-q")).toBe("aXb*c+d?e^f$g{h}i(j)k|l[m]n\\o/p-q");
  });

  test("two names with one value: replaced once, by one of the names", () => {
    const r = redactorFor(snapshot({ FIRST: "samevalue1", SECOND: "samevalue1" }));
    expect(r?.text("samevalue1")).toMatch(/^\[secret (FIRST|SECOND)\]$/);
  });

  test("repeated use keeps matching (the global pattern's position is reset)", () => {
    for (let i = 0; i < 3; i++) expect(redactor.text(`x ${STRIPE}`)).toBe("x [secret STRIPE_KEY]");
  });

  test("a transformed secret is not recognised (documented)", () => {
    const encoded = Buffer.from(STRIPE).toString("base64");
    expect(redactor.text(encoded)).toBe(encoded);
  });
});

describe("json", () => {
  test("every string and key, nested; numbers, booleans and null as they are", () => {
    const value = {
      plain: STRIPE,
      nested: { deep: [1, true, null, `Bearer ${STRIPE}`, { [STRIPE]: "tok-12345678" }] },
      n: 42,
    };
    expect(redactor.json(value) as unknown).toEqual({
      plain: "[secret STRIPE_KEY]",
      nested: { deep: [1, true, null, "Bearer [secret STRIPE_KEY]", { "[secret STRIPE_KEY]": "[secret TOKEN]" }] },
      n: 42,
    });
    // The input is not changed.
    expect(value.plain).toBe(STRIPE);
  });

  test("the same object (no copy) when nothing matched; only the changed branch is copied", () => {
    const untouched = { a: { b: ["c", 1] }, d: "e" };
    expect(redactor.json(untouched)).toBe(untouched);
    const value = { keep: { x: [1, 2] }, change: [STRIPE] };
    const redacted = redactor.json(value);
    expect(redacted).not.toBe(value);
    expect(redacted.keep).toBe(value.keep);
    expect(redacted.change).toEqual(["[secret STRIPE_KEY]"]);
    expect(redactor.json(STRIPE)).toBe("[secret STRIPE_KEY]");
    expect(redactor.json(7)).toBe(7);
    expect(redactor.json(null)).toBeNull();
  });

  test("key order is kept and a __proto__ key stays an own key", () => {
    const value = JSON.parse(`{"first":1,"__proto__":{"p":"${STRIPE}"},"last":"${STRIPE}"}`);
    const redacted = redactor.json(value);
    expect(Object.keys(redacted)).toEqual(["first", "__proto__", "last"]);
    expect(JSON.stringify(redacted)).toBe(
      '{"first":1,"__proto__":{"p":"[secret STRIPE_KEY]"},"last":"[secret STRIPE_KEY]"}',
    );
  });

  test("a large value with no secret is scanned in linear time", () => {
    const big = { rows: Array.from({ length: 20_000 }, (_, i) => ({ id: i, text: "x".repeat(50) })) };
    const started = performance.now();
    expect(redactor.json(big)).toBe(big);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
