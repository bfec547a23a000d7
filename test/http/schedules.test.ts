import { describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tickRequestId } from "../../src/engine/schedules/ticks.ts";
import { type RunningServer, startServer } from "../../src/main.ts";
import { openStore } from "../../src/store/open.ts";
import { serve } from "../support/cli.ts";
import { dialects, runStatement, selectRows } from "../support/databases.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const HOUR = 3_600_000;
const [sqlite, pg] = [dialects.find((d) => d.name === "sqlite"), dialects.find((d) => d.name === "postgres")];

interface TickRow {
  request_id: string;
  status: string;
  action: string;
  output: unknown;
}

const executionsOf = (t: TestServer, schedule: string) =>
  selectRows(
    t.config.databaseUrl,
    `select request_id, status, action, output from executions where principal_kind = 'service' and principal_id = 'schedule:${schedule}'`,
  ).then((rows) => rows as unknown as TickRow[]);

/**
 * The tick each execution ran for (found by its request id among the ticks of an `every` schedule in
 * [from, to]); fails on an execution that is no tick's. Sorted.
 */
function ticksOf(rows: TickRow[], schedule: string, everyMs: number, from: number, to: number): number[] {
  const byRequest = new Map<string, number>();
  for (let t = Math.floor(from / everyMs) * everyMs; t <= to; t += everyMs)
    byRequest.set(tickRequestId(schedule, t), t);
  return rows
    .map((row) => {
      const tick = byRequest.get(row.request_id);
      if (tick === undefined) throw new Error(`execution ${row.request_id} is no tick of ${schedule}`);
      return tick;
    })
    .sort((a, b) => a - b);
}

/** Exactly one execution per tick, and no tick left out between the first and the last. */
function expectEveryTickOnce(ticks: number[], everyMs: number) {
  const first = ticks[0] ?? 0;
  expect(ticks).toEqual(Array.from({ length: ticks.length }, (_, i) => first + i * everyMs));
}

/**
 * The server's clock for a test that sets hours behind its back: the wall clock, moved forward when it
 * must be so that the test starts at least 10 s past an hour (a tick found within ON_TIME_MS of its time
 * is on time, not missed) and ends before the next hour.
 */
function clockAwayFromTheHour(): () => number {
  const intoHour = Date.now() % HOUR;
  const shift = intoHour < 10_000 ? 10_000 - intoHour : intoHour > HOUR - 120_000 ? HOUR - intoHour + 10_000 : 0;
  return () => Date.now() + shift;
}

/** A copy of the schedules fixture whose release.ts is `source`. */
function releaseWith(source: string): string {
  const dir = mkdtempSync(join(tmpdir(), "actuate-schedules-"));
  cpSync(fixture("schedules"), dir, { recursive: true });
  writeFileSync(join(dir, "release.ts"), source);
  return dir;
}

describe.if(sqlite !== undefined)("schedules on one instance (sqlite)", () => {
  test("GET /schedules: service keys see each schedule with its last and next tick; users are refused; no credential is 401", async () => {
    const t = await startTestServer(sqlite as NonNullable<typeof sqlite>, { release: fixture("schedules") });
    try {
      await eventually(async () => (await t.store.schedules.list()).length === 5);
      const res = await t.fetch("/schedules");
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body.release).toBe("s1");
      expect(body.items.map((s: { name: string }) => s.name)).toEqual([
        "heartbeat",
        "hourly-all",
        "hourly-latest",
        "hourly-none",
        "nightly",
      ]);
      const nightly = body.items.find((s: { name: string }) => s.name === "nightly");
      expect(nightly).toMatchObject({
        action: "sched.ping",
        cron: "0 3 * * *",
        every: null,
        timezone: "Europe/Paris",
        catchUp: "latest",
        input: { note: "night" },
      });
      expect(typeof nightly.lastTickAt).toBe("string");
      expect(Date.parse(nightly.nextTickAt)).toBeGreaterThan(Date.now());
      expect(new Date(nightly.nextTickAt).toLocaleTimeString("en-GB", { timeZone: "Europe/Paris" })).toBe("03:00:00");

      const user = await t.fetch("/schedules", { token: await t.userToken("ursula") });
      expect(user.status).toBe(403);
      expect(await user.json()).toMatchObject({ ok: false, error: "access_denied" });
      const anonymous = await t.fetch("/schedules", { token: null });
      expect(anonymous.status).toBe(401);
      expect(await anonymous.json()).toMatchObject({ ok: false, error: "unauthorized" });

      // describe shows them to service keys only.
      const described = await (await t.fetch("/describe")).json();
      expect(described.schedules.map((s: { name: string }) => s.name)).toContain("nightly");
      const describedToUser = await (await t.fetch("/describe", { token: await t.userToken("ursula") })).json();
      expect(describedToUser.schedules).toBeUndefined();
    } finally {
      await t.stop();
    }
  }, 30_000);

  test("a 1 s schedule runs once per tick as schedule:<name>, across a restart during a tick; missed hours follow each catch-up policy", async () => {
    const now = clockAwayFromTheHour();
    const t = await startTestServer(sqlite as NonNullable<typeof sqlite>, {
      now,
      release: releaseWith(`import { defineRelease } from "actuate";
export default defineRelease({
  version: "s1",
  schedules: {
    heartbeat: { every: "1s", action: "sched.ping", input: { note: "beat", ms: 300 }, catchUp: "all" },
    "hourly-all": { every: "1h", action: "sched.flow", input: { note: "all" }, catchUp: "all" },
    "hourly-latest": { every: "1h", action: "sched.ping", input: { note: "latest" } },
    "hourly-none": { every: "1h", action: "sched.ping", input: { note: "none" }, catchUp: "none" },
  },
});`),
    });
    const started = now();
    try {
      // A tick's handler takes 300 ms: the restart finds one in flight (the stop lets it finish).
      await eventually(async () => (await executionsOf(t, "heartbeat")).length >= 2, 10_000);

      // Three hours missed by the hourly schedules: set behind the server's back, then the restart finds them.
      const H = Math.floor(now() / HOUR) * HOUR;
      await runStatement(
        t.config.databaseUrl,
        `update schedule_ticks set last_tick_at = ${H - 3 * HOUR} where name like 'hourly-%'`,
      );
      await eventually(async () => (await executionsOf(t, "heartbeat")).some((r) => r.status === "running"), 5_000);
      await t.restart();
      const before = (await executionsOf(t, "heartbeat")).length;
      await eventually(async () => (await executionsOf(t, "heartbeat")).length >= before + 3, 10_000);
      await eventually(async () => {
        const rows = await t.store.schedules.list();
        return rows.filter((r) => r.name.startsWith("hourly-") && r.lastTickAt === H).length === 3;
      });

      const heartbeat = await executionsOf(t, "heartbeat");
      expectEveryTickOnce(ticksOf(heartbeat, "heartbeat", 1000, started - 1000, now()), 1000);
      const finished = heartbeat.filter((r) => r.status !== "running");
      expect(finished.every((r) => r.status === "succeeded")).toBe(true);
      expect(JSON.parse(String(finished[0]?.output))).toEqual({ note: "beat", by: "schedule:heartbeat" });

      const hourly = (name: string) => executionsOf(t, name).then((rows) => ticksOf(rows, name, HOUR, H - 4 * HOUR, H));
      expect(await hourly("hourly-all")).toEqual([H - 2 * HOUR, H - HOUR, H]);
      expect(await hourly("hourly-latest")).toEqual([H]);
      expect(await hourly("hourly-none")).toEqual([]);
      // The workflow ticks were admitted as runs and end like any.
      await eventually(async () => {
        const rows = await executionsOf(t, "hourly-all");
        return rows.every((r) => r.status === "succeeded");
      });
    } finally {
      await t.stop();
    }
  }, 60_000);

  test("activating a release replaces the schedules: a removed one stops, an added one starts", async () => {
    const t = await startTestServer(sqlite as NonNullable<typeof sqlite>, {
      release: releaseWith(`import { defineRelease } from "actuate";
export default defineRelease({ version: "a1", schedules: { old: { every: "1s", action: "sched.ping", input: { note: "old" } } } });`),
    });
    try {
      await eventually(async () => (await executionsOf(t, "old")).length >= 1, 10_000);
      const published = await t.publish(
        releaseWith(`import { defineRelease } from "actuate";
export default defineRelease({ version: "a2", schedules: { fresh: { every: "1s", action: "sched.ping", input: { note: "fresh" } } } });`),
      );
      expect(published.scheduleChanges).toEqual([
        { name: "fresh", change: "added" },
        { name: "old", change: "removed" },
      ]);
      await eventually(async () => (await executionsOf(t, "fresh")).length >= 1, 10_000);
      const oldAfterSwitch = (await executionsOf(t, "old")).length;
      await eventually(async () => (await executionsOf(t, "fresh")).length >= 3, 10_000);
      expect((await executionsOf(t, "old")).length).toBe(oldAfterSwitch);
      const listed = await (await t.fetch("/schedules")).json();
      expect(listed.items.map((s: { name: string }) => s.name)).toEqual(["fresh"]);
    } finally {
      await t.stop();
    }
  }, 30_000);
});

describe.if(pg !== undefined)("schedules on three instances (postgres)", () => {
  test("a 1 s schedule on three instances of one database runs exactly once per tick", async () => {
    const t = await startTestServer(pg as NonNullable<typeof pg>, {
      release: releaseWith(`import { defineRelease } from "actuate";
export default defineRelease({ version: "p1", schedules: { heartbeat: { every: "1s", action: "sched.ping", input: { note: "beat", ms: 50 } } } });`),
    });
    const others: RunningServer[] = [];
    const started = Date.now();
    try {
      for (let i = 0; i < 2; i++) {
        others.push(await startServer(t.config, { store: await openStore(t.config.databaseUrl), log: () => {} }));
      }
      await eventually(async () => (await executionsOf(t, "heartbeat")).length >= 6, 15_000);
      await Promise.all(others.map((server) => server.stop()));
      await Promise.all(others.map((server) => server.store.close()));
      others.length = 0;
      const rows = await executionsOf(t, "heartbeat");
      expectEveryTickOnce(ticksOf(rows, "heartbeat", 1000, started - 1000, Date.now()), 1000);
    } finally {
      await Promise.all(others.map(async (server) => server.stop().then(() => server.store.close())));
      await t.stop();
    }
  }, 60_000);
});

describe("bun run dev", () => {
  test("shows the next tick of each schedule", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-dev-schedules-"));
    const server = await serve(["dev", "--release", fixture("schedules")], {
      DATA_DIR: dataDir,
      DATABASE_URL: "",
      SERVICE_KEYS: "",
    });
    try {
      await server.waitFor(/watching/, 15_000);
      const line = /nightly\s+sched\.ping\s+cron "0 3 \* \* \*" Europe\/Paris, next (\S+)/.exec(server.output());
      expect(line).not.toBeNull();
      const next = new Date(line?.[1] ?? "");
      expect(next.getTime()).toBeGreaterThan(Date.now());
      expect(next.toLocaleTimeString("en-GB", { timeZone: "Europe/Paris" })).toBe("03:00:00");
      expect(server.output()).toMatch(/heartbeat\s+sched\.ping\s+every 1s, next /);
    } finally {
      await server.kill();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);
});
