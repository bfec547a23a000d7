import { describe, expect, test } from "bun:test";
import { dueTicks, LOOKBACK_MS, MAX_CATCH_UP, ON_TIME_MS, tickRequestId } from "../../src/engine/schedules/ticks.ts";
import { uuidV5 } from "../../src/lib/ids.ts";
import type { CompiledContract } from "../../src/release/contract.ts";
import { compileContract } from "../../src/release/contract.ts";
import { ReleaseError } from "../../src/release/errors.ts";
import { compileSchedules, diffSchedules, scheduleManifest } from "../../src/release/schedules.ts";
import { defineRelease, Type } from "../../src/sdk/index.ts";

const ping = compileContract({
  name: "sched.ping",
  kind: "function",
  description: "ping",
  input: Type.Object({ note: Type.String() }),
  output: Type.Object({}),
  access: "authenticated",
});
const actions = new Map<string, CompiledContract>([["sched.ping", ping]]);
const compile = (schedules: Record<string, unknown>) =>
  compileSchedules(defineRelease({ schedules } as Parameters<typeof defineRelease>[0]), actions);
const one = (definition: Record<string, unknown>) => {
  const schedule = compile({ s: definition }).get("s");
  if (!schedule) throw new Error("not compiled");
  return schedule;
};
const utc = (iso: string) => Date.parse(iso);
const isoTicks = (schedule: { nextAfter(t: number): number | null }, from: string, count: number) => {
  const ticks: string[] = [];
  let t: number | null = utc(from);
  for (let i = 0; i < count && t !== null; i++) {
    t = schedule.nextAfter(t);
    if (t !== null) ticks.push(new Date(t).toISOString());
  }
  return ticks;
};

describe("a schedule's clock", () => {
  test("every: ticks on multiples of the interval since the epoch, strictly after the time given", () => {
    const s = one({ every: "30s", action: "sched.ping", input: { note: "x" } });
    expect(isoTicks(s, "2026-01-01T00:00:10Z", 3)).toEqual([
      "2026-01-01T00:00:30.000Z",
      "2026-01-01T00:01:00.000Z",
      "2026-01-01T00:01:30.000Z",
    ]);
    expect(s.nextAfter(utc("2026-01-01T00:00:30Z"))).toBe(utc("2026-01-01T00:01:00Z"));
  });

  test("a time-zone cron across both DST changes: one tick a day at the zone's hour (computed, not waited for)", () => {
    const paris3 = one({ cron: "0 3 * * *", timezone: "Europe/Paris", action: "sched.ping", input: { note: "x" } });
    // 03:00 in Paris is 02:00 UTC in winter (CET) and 01:00 UTC in summer (CEST, from 29 March 2026).
    expect(isoTicks(paris3, "2026-03-27T12:00:00Z", 3)).toEqual([
      "2026-03-28T02:00:00.000Z",
      "2026-03-29T01:00:00.000Z",
      "2026-03-30T01:00:00.000Z",
    ]);
    expect(isoTicks(paris3, "2026-10-23T12:00:00Z", 3)).toEqual([
      "2026-10-24T01:00:00.000Z",
      "2026-10-25T02:00:00.000Z",
      "2026-10-26T02:00:00.000Z",
    ]);
    // 02:30 does not exist on 29 March (it runs at 03:30 CEST) and happens twice on 25 October (it runs once).
    const paris230 = one({ cron: "30 2 * * *", timezone: "Europe/Paris", action: "sched.ping", input: { note: "x" } });
    expect(isoTicks(paris230, "2026-03-28T12:00:00Z", 2)).toEqual([
      "2026-03-29T01:30:00.000Z",
      "2026-03-30T00:30:00.000Z",
    ]);
    expect(isoTicks(paris230, "2026-10-24T12:00:00Z", 2)).toEqual([
      "2026-10-25T01:30:00.000Z",
      "2026-10-26T01:30:00.000Z",
    ]);
  });

  test("a cron without a time zone reads UTC; six fields take seconds first", () => {
    expect(
      isoTicks(one({ cron: "0 3 * * *", action: "sched.ping", input: { note: "x" } }), "2026-07-01T00:00:00Z", 1),
    ).toEqual(["2026-07-01T03:00:00.000Z"]);
    expect(
      isoTicks(one({ cron: "*/20 * * * * *", action: "sched.ping", input: { note: "x" } }), "2026-07-01T00:00:00Z", 2),
    ).toEqual(["2026-07-01T00:00:20.000Z", "2026-07-01T00:00:40.000Z"]);
  });
});

describe("catch-up of missed ticks (fake clock)", () => {
  const hourly = one({ every: "1h", action: "sched.ping", input: { note: "x" } });
  const H = utc("2026-05-01T12:00:00Z");
  const HOUR = 3_600_000;

  test("on time, every policy runs the one due tick", () => {
    for (const policy of ["none", "latest", "all"] as const) {
      expect(dueTicks(hourly, policy, H - HOUR, H + 10)).toEqual({ run: [H], handledUpTo: H });
    }
    expect(dueTicks(hourly, "all", H, H + 10)).toEqual({ run: [], handledUpTo: null });
  });

  test("after three missed hours: all runs each, latest the newest, none nothing (all of them are handled)", () => {
    const now = H + 20 * 60_000;
    expect(dueTicks(hourly, "all", H - 3 * HOUR, now)).toEqual({ run: [H - 2 * HOUR, H - HOUR, H], handledUpTo: H });
    expect(dueTicks(hourly, "latest", H - 3 * HOUR, now)).toEqual({ run: [H], handledUpTo: H });
    expect(dueTicks(hourly, "none", H - 3 * HOUR, now)).toEqual({ run: [], handledUpTo: H });
    // "none" still runs a tick found within ON_TIME_MS of its time.
    expect(dueTicks(hourly, "none", H - 3 * HOUR, H + ON_TIME_MS)).toEqual({ run: [H], handledUpTo: H });
  });

  test("bounded: all runs at most the latest MAX_CATCH_UP ticks, looked for at most LOOKBACK_MS back", () => {
    const seconds = one({ every: "1s", action: "sched.ping", input: { note: "x" } });
    const now = H + 500;
    const { run, handledUpTo } = dueTicks(seconds, "all", H - 30 * 24 * HOUR, now);
    expect(run).toHaveLength(MAX_CATCH_UP);
    expect(run[0]).toBe(H - (MAX_CATCH_UP - 1) * 1000);
    expect(handledUpTo).toBe(H);
    expect(dueTicks(hourly, "all", H - 30 * 24 * HOUR, now).run).toHaveLength(LOOKBACK_MS / HOUR);
  });
});

describe("tick request ids", () => {
  test("UUIDv5 (RFC 9562's example), the same for a schedule's tick everywhere, different per tick and schedule", () => {
    expect(uuidV5("6ba7b810-9dad-11d1-80b4-00c04fd430c8", "www.example.com")).toBe(
      "2ed6657d-e927-568b-95e1-2665a8aea6a2",
    );
    const t = utc("2026-05-01T12:00:00Z");
    expect(tickRequestId("nightly", t)).toBe(tickRequestId("nightly", t));
    expect(tickRequestId("nightly", t)).not.toBe(tickRequestId("nightly", t + 1000));
    expect(tickRequestId("nightly", t)).not.toBe(tickRequestId("heartbeat", t));
    expect(tickRequestId("nightly", t)).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });
});

describe("validation at publish", () => {
  const refusals: [string, Record<string, unknown>, string][] = [
    ["bad cron", { cron: "61 * * * *", action: "sched.ping", input: { note: "x" } }, 'schedules.s: cron "61 * * * *"'],
    ["bad zone", { cron: "0 3 * * *", timezone: "Mars/Base", action: "sched.ping", input: { note: "x" } }, "IANA"],
    ["no such action", { every: "1m", action: "sched.nope" }, '"sched.nope" is not an action of this release'],
    ["input off contract", { every: "1m", action: "sched.ping", input: { note: 3 } }, "input does not fit"],
    ["unknown key", { every: "1m", action: "sched.ping", input: { note: "x" }, when: 1 }, 'unknown option "when"'],
    [
      "both clocks",
      { every: "1m", cron: "* * * * *", action: "sched.ping", input: { note: "x" } },
      "either cron or every",
    ],
    ["no clock", { action: "sched.ping", input: { note: "x" } }, "either cron or every"],
    ["too fast", { every: "500ms", action: "sched.ping", input: { note: "x" } }, "at least 1s"],
    ["bad interval", { every: "soon", action: "sched.ping", input: { note: "x" } }, 'every must be like "30s"'],
    ["zone on every", { every: "1m", timezone: "UTC", action: "sched.ping", input: { note: "x" } }, "timezone applies"],
    ["bad policy", { every: "1m", action: "sched.ping", input: { note: "x" }, catchUp: "some" }, "catchUp must be"],
  ];
  for (const [what, definition, message] of refusals) {
    test(`refused: ${what}`, () => {
      expect(() => one(definition)).toThrow(ReleaseError);
      expect(() => one(definition)).toThrow(message);
    });
  }

  test("a bad schedule name is refused; defaults are catchUp latest and UTC", () => {
    expect(() => compile({ "9lives": { every: "1m", action: "sched.ping", input: { note: "x" } } })).toThrow(
      "schedule's name",
    );
    expect(scheduleManifest(one({ cron: "0 * * * *", action: "sched.ping", input: { note: "x" } }))).toEqual({
      name: "s",
      action: "sched.ping",
      input: { note: "x" },
      cron: "0 * * * *",
      every: null,
      timezone: "UTC",
      catchUp: "latest",
    });
  });

  test("the publish diff names added, removed, changed and unchanged schedules", () => {
    const before = [
      ...compile({
        a: { every: "1m", action: "sched.ping", input: { note: "a" } },
        b: { every: "1h", action: "sched.ping", input: { note: "b" } },
      }).values(),
    ].map(scheduleManifest);
    const after = [
      ...compile({
        a: { every: "1m", action: "sched.ping", input: { note: "a" } },
        b: { every: "2h", action: "sched.ping", input: { note: "b" } },
        c: { every: "1d", action: "sched.ping", input: { note: "c" } },
      }).values(),
    ].map(scheduleManifest);
    expect(diffSchedules(before, after)).toEqual([
      { name: "a", change: "unchanged" },
      { name: "b", change: "changed" },
      { name: "c", change: "added" },
    ]);
    expect(diffSchedules(after, [])).toEqual([
      { name: "a", change: "removed" },
      { name: "b", change: "removed" },
      { name: "c", change: "removed" },
    ]);
  });
});
