import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";

// Issue #44 §2 (docs/decisions/previews.md): the store's part of TTL expiry and paused schedules, on both
// databases: an expired environment is taken by one claimer, environment 1 never; a paused environment's
// schedules are not due; resuming makes its next tick due.

for (const dialect of dialects) {
  describe(`expiry claims and paused schedules (${dialect.name})`, () => {
    let database: TestDatabase;
    let store: Store;
    let org: number;

    beforeAll(async () => {
      database = await dialect.create();
      store = await openStore(database.url);
      org = (await store.control.organizations.create("acme", Date.now())).id;
    });
    afterAll(async () => {
      await store?.close();
      await database?.drop();
    });

    test("expired environments are claimed once across concurrent claimers; others, and environment 1, are not", async () => {
      const { environments } = store.control;
      const now = Date.now();
      const made = await Promise.all(
        ["old-1", "old-2", "old-3", "later"].map((handle) => environments.create(handle, org, now)),
      );
      for (const env of made.slice(0, 3)) await environments.setExpiresAt(env.id, now - 1_000);
      await environments.setExpiresAt((made[3] as { id: number }).id, now + 60_000);
      await environments.setExpiresAt(1, now - 1_000);
      const [a, b] = await Promise.all([
        environments.claimExpired(now, now + 600_000, 16),
        environments.claimExpired(now, now + 600_000, 16),
      ]);
      const ids = [...a, ...b].map((row) => row.id).sort((x, y) => x - y);
      // Created at once: their ids are in no particular order.
      expect(ids).toEqual(
        made
          .slice(0, 3)
          .map((env) => env.id)
          .sort((x, y) => x - y),
      );
      for (const row of [...a, ...b]) expect(row.expiresAt).toBe(now + 600_000);
      // Taken for the lease: not again before it runs out, again after.
      expect(await environments.claimExpired(now + 1, now + 600_000, 16)).toEqual([]);
      const again = await environments.claimExpired(now + 600_000, now + 1_200_000, 1);
      expect(again).toHaveLength(1);
      expect(again[0]?.id).not.toBe(1);
    });

    test("a paused environment's schedules are not due; resuming makes its next tick due then", async () => {
      const { environments } = store.control;
      const now = Date.now();
      const env = await environments.create("ticks", org, now);
      await store.environment(env.id).schedules.setNextTick(now - 10);
      const paused = await environments.setSchedulesPaused(env.id, true, now);
      expect(paused?.schedulesPaused).toBe(true);
      expect(await store.schedules.claimDueEnvironments(now, now + 30_000, 16)).not.toContain(env.id);
      expect(await store.schedules.nextTickAt()).not.toBe(now - 10);
      const resumed = await environments.setSchedulesPaused(env.id, false, now + 5);
      expect(resumed).toMatchObject({ schedulesPaused: false, nextTickAt: now + 5 });
      expect(await store.schedules.claimDueEnvironments(now + 5, now + 30_000, 16)).toContain(env.id);
      expect(await environments.setSchedulesPaused(999_999, true, now)).toBeNull();
    });
  });
}
