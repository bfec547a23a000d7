import { describe, expect, test } from "bun:test";
import { loadSettings as load, refusalOf as refusal } from "../support/config.ts";

// Issue #43: DRAIN_READY_MS and DRAIN_MS (stopping), FOLLOW_POLL_MS (a follower's fallback poll).

describe("DRAIN_READY_MS and DRAIN_MS", () => {
  test("5 s each by default; 0 allowed; a negative or a word refused, naming the setting", () => {
    expect(load({})).toMatchObject({ drainReadyMs: 5_000, drainMs: 5_000 });
    expect(load({ DRAIN_READY_MS: "0", DRAIN_MS: "250" })).toMatchObject({ drainReadyMs: 0, drainMs: 250 });
    expect(refusal({ DRAIN_READY_MS: "-1" })).toContain("DRAIN_READY_MS");
    expect(refusal({ DRAIN_MS: "soon" })).toContain("DRAIN_MS");
  });
});

describe("FOLLOW_POLL_MS", () => {
  test("25 ms doubling to 1 s by default; one value for both ends; a range", () => {
    expect(load({}).followPoll).toEqual({ minMs: 25, maxMs: 1_000 });
    expect(load({ FOLLOW_POLL_MS: "60000" }).followPoll).toEqual({ minMs: 60_000, maxMs: 60_000 });
    expect(load({ FOLLOW_POLL_MS: "50-2000" }).followPoll).toEqual({ minMs: 50, maxMs: 2_000 });
  });

  test("a first wait longer than the longest, a zero or a malformed value is refused, naming the setting", () => {
    expect(refusal({ FOLLOW_POLL_MS: "2000-50" })).toContain("the first wait is longer than the longest");
    for (const value of ["0", "-5", "10-", "fast", "1-2-3"])
      expect(refusal({ FOLLOW_POLL_MS: value })).toContain("FOLLOW_POLL_MS");
  });
});
