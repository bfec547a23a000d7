import { describe, expect, test } from "bun:test";
import { loadSettings, refusalOf } from "../support/config.ts";

// Issue #44: SECRETS_KEY (and SECRETS_KEY_PREVIOUS during a rotation), EXPIRY_SWEEP_MS (forks' TTL).
const HEX_KEY = "ab".repeat(32);
const BASE64_KEY = Buffer.from(new Uint8Array(32).fill(7)).toString("base64");

describe("SECRETS_KEY", () => {
  test("unset by default: no key (dev makes a key file, start stores no secret)", () => {
    expect(loadSettings({}).secretsKey).toBeUndefined();
  });

  test("32 bytes as hex or base64, trimmed; SECRETS_KEY_PREVIOUS a comma-separated list", () => {
    expect(loadSettings({ SECRETS_KEY: ` ${HEX_KEY}\n` }).secretsKey).toEqual({ current: HEX_KEY, previous: [] });
    expect(
      loadSettings({ SECRETS_KEY: BASE64_KEY, SECRETS_KEY_PREVIOUS: ` ${HEX_KEY}, ,${BASE64_KEY}` }).secretsKey,
    ).toEqual({ current: BASE64_KEY, previous: [HEX_KEY, BASE64_KEY] });
  });

  test("a key of another length or alphabet is refused, naming the setting but never repeating the key", () => {
    for (const bad of ["ab".repeat(16), `${HEX_KEY}00`, "not a key at all, certainly not 32 bytes of it"]) {
      const message = refusalOf({ SECRETS_KEY: bad });
      expect(message).toContain("SECRETS_KEY");
      expect(message).not.toContain(bad);
    }
  });
});

describe("EXPIRY_SWEEP_MS", () => {
  test("a minute by default; 100 ms to an hour; outside refused, naming the setting", () => {
    expect(loadSettings({}).expirySweepMs).toBe(60_000);
    expect(loadSettings({ EXPIRY_SWEEP_MS: "100" }).expirySweepMs).toBe(100);
    expect(refusalOf({ EXPIRY_SWEEP_MS: "99" })).toContain("EXPIRY_SWEEP_MS");
    expect(refusalOf({ EXPIRY_SWEEP_MS: "3600001" })).toContain("EXPIRY_SWEEP_MS");
    expect(refusalOf({ EXPIRY_SWEEP_MS: "soon" })).toContain("EXPIRY_SWEEP_MS");
  });
});
