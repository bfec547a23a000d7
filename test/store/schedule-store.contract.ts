import { expect, test } from "bun:test";
import type { Store } from "../../src/store/store.ts";
import { at, type OpenStores, storesPerTest } from "./fixture.ts";

const LEASE = 10_000;

/**
 * What every ScheduleStore promises (src/store/schedules.ts), whatever the dialect: run by
 * test/store/contracts.test.ts. Owners "A" and "B" are two instances (on two stores where the dialect has several).
 */
export function scheduleStoreContract(open: OpenStores) {
  let store: Store;
  let peer: Store;
  storesPerTest(open, (opened) => {
    ({ store, peer } = opened);
  });

  test("a schedule seen for the first time starts at the claim's time; the claim is exclusive until let go", async () => {
    expect(await store.schedules.claim("nightly", "A", at(0), at(LEASE))).toBe(at(0));
    expect(await peer.schedules.claim("nightly", "B", at(1), at(1 + LEASE))).toBeNull();
    // The holder may claim again (renew); another schedule is claimed independently.
    expect(await store.schedules.claim("nightly", "A", at(2), at(2 + LEASE))).toBe(at(0));
    expect(await peer.schedules.claim("heartbeat", "B", at(2), at(2 + LEASE))).toBe(at(2));

    expect(await store.schedules.advance("nightly", "A", at(1_000))).toBe(true);
    await store.schedules.release("nightly", "A");
    expect(await peer.schedules.claim("nightly", "B", at(3), at(3 + LEASE))).toBe(at(1_000));
    expect((await store.schedules.list()).map((r) => [r.name, r.lastTickAt, r.leaseOwner])).toEqual([
      ["heartbeat", at(2), "B"],
      ["nightly", at(1_000), "B"],
    ]);
  });

  test("an expired claim is taken over, and the old holder's writes are fenced off", async () => {
    expect(await store.schedules.claim("s", "A", at(0), at(LEASE))).toBe(at(0));
    expect(await peer.schedules.claim("s", "B", at(LEASE - 1), at(2 * LEASE))).toBeNull();
    expect(await peer.schedules.claim("s", "B", at(LEASE + 1), at(2 * LEASE))).toBe(at(0));
    expect(await store.schedules.advance("s", "A", at(5_000))).toBe(false);
    await store.schedules.release("s", "A");
    expect(await peer.schedules.advance("s", "B", at(6_000))).toBe(true);
    expect(await store.schedules.claim("s", "A", at(LEASE + 2), at(3 * LEASE))).toBeNull();
    expect((await store.schedules.list())[0]).toMatchObject({ lastTickAt: at(6_000), leaseOwner: "B" });
  });

  test("two instances claiming at once: exactly one wins", async () => {
    const claims = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 ? peer : store).schedules.claim("race", `owner-${i}`, at(0), at(LEASE)),
      ),
    );
    expect(claims.filter((c) => c !== null)).toEqual([at(0)]);
  });

  test("the same name in two environments is two schedules: claims, ticks, releases and lists stay apart", async () => {
    const [one, two] = [store.schedules, peer.environment(2).schedules];
    expect(await one.claim("nightly", "A", at(0), at(LEASE))).toBe(at(0));
    // Held by A in environment 1, free in environment 2.
    expect(await two.claim("nightly", "B", at(1), at(1 + LEASE))).toBe(at(1));
    expect(await one.advance("nightly", "B", at(500))).toBe(false);
    expect(await two.advance("nightly", "A", at(500))).toBe(false);
    expect(await two.advance("nightly", "B", at(2_000))).toBe(true);
    await two.release("nightly", "A");
    await one.release("nightly", "B");
    expect(await store.environment(2).schedules.claim("nightly", "C", at(2), at(2 + LEASE))).toBeNull();
    expect(await peer.schedules.claim("nightly", "C", at(2), at(2 + LEASE))).toBeNull();

    await one.release("nightly", "A");
    expect(await one.list()).toEqual([{ name: "nightly", lastTickAt: at(0), leaseOwner: null, leaseExpiresAt: 0 }]);
    expect(await two.list()).toEqual([
      { name: "nightly", lastTickAt: at(2_000), leaseOwner: "B", leaseExpiresAt: at(1 + LEASE) },
    ]);
    expect(await store.environment(3).schedules.list()).toEqual([]);
  });
}
