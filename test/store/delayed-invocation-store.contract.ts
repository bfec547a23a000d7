import { expect, test } from "bun:test";
import type { ScheduledRow } from "../../src/store/rows.ts";
import type { Store } from "../../src/store/store.ts";
import { at, type OpenStores, storesPerTest } from "./fixture.ts";

const LEASE = 10_000;

function scheduledRow(dueOffset: number, principalId = "alice"): ScheduledRow {
  const id = Bun.randomUUIDv7();
  return {
    id,
    principalKind: "user",
    principalId,
    principalClaims: principalId === "alice" ? { role: "admin" } : null,
    action: "sched.record",
    input: { note: "n" },
    requestId: id,
    dueAt: at(dueOffset),
    scheduledBy: Bun.randomUUIDv7(),
    status: "pending",
    executionId: null,
    leaseOwner: null,
    leaseExpiresAt: null,
    createdAt: at(0),
    updatedAt: at(0),
  };
}

/**
 * What every DelayedInvocationStore promises (src/store/delayed-invocations.ts), whatever the dialect: run by
 * test/store/contracts.test.ts. "A" and "B" are two instances (two stores where the dialect has several).
 */
export function delayedInvocationStoreContract(open: OpenStores) {
  let store: Store;
  let peer: Store;
  storesPerTest(open, (opened) => {
    ({ store, peer } = opened);
  });

  test("only due ones are claimed, oldest first, each by one instance; rows read back as written", async () => {
    const rows = [scheduledRow(300), scheduledRow(100), scheduledRow(200), scheduledRow(5_000)];
    await store.delayedInvocations.insert(rows);
    expect(await store.delayedInvocations.get(rows[1]?.id ?? "")).toEqual(rows[1] ?? null);
    expect(await store.delayedInvocations.nextDueAt()).toBe(at(100));

    const [a, b] = await Promise.all([
      store.delayedInvocations.claimDue("A", at(1_000), at(1_000 + LEASE), 2),
      peer.delayedInvocations.claimDue("B", at(1_000), at(1_000 + LEASE), 2),
    ]);
    const claimed = [...a, ...b].map((r) => r.dueAt).sort();
    expect(claimed).toEqual([at(100), at(200), at(300)]);
    expect(new Set([...a, ...b].map((r) => r.id)).size).toBe(3);
    expect(await store.delayedInvocations.claimDue("A", at(1_001), at(1_001 + LEASE), 10)).toEqual([]);
  });

  test("marking started is fenced by the lease; an expired lease is claimed again", async () => {
    const row = scheduledRow(0);
    await store.delayedInvocations.insert([row]);
    expect((await store.delayedInvocations.claimDue("A", at(1), at(1 + LEASE), 10)).map((r) => r.id)).toEqual([row.id]);
    const [taken] = await peer.delayedInvocations.claimDue("B", at(2 + LEASE), at(2 + 2 * LEASE), 10);
    expect(taken?.id).toBe(row.id);
    expect(
      await store.delayedInvocations.markStarted("A", [{ id: row.id, executionId: "e-a" }], at(3 + LEASE)),
    ).toEqual([]);
    expect(await peer.delayedInvocations.markStarted("B", [{ id: row.id, executionId: "e-b" }], at(3 + LEASE))).toEqual(
      [row.id],
    );
    expect(await store.delayedInvocations.get(row.id)).toMatchObject({
      status: "started",
      executionId: "e-b",
      leaseOwner: null,
      leaseExpiresAt: null,
    });
    expect(await store.delayedInvocations.claimDue("A", at(4 * LEASE), at(5 * LEASE), 10)).toEqual([]);
    expect(await store.delayedInvocations.nextDueAt()).toBeNull();
  });

  test("cancel: only a pending one of its principal (any for null) that no live lease holds", async () => {
    const [mine, held, started] = [scheduledRow(0), scheduledRow(0), scheduledRow(0)];
    await store.delayedInvocations.insert([mine, held, started]);
    expect(await store.delayedInvocations.cancel(mine.id, { kind: "user", id: "bob" }, at(1))).toBe(false);
    expect(await store.delayedInvocations.cancel(mine.id, { kind: "user", id: "alice" }, at(1))).toBe(true);
    expect(await store.delayedInvocations.get(mine.id)).toMatchObject({ status: "canceled", updatedAt: at(1) });
    expect(await store.delayedInvocations.cancel(mine.id, null, at(2))).toBe(false);

    await store.delayedInvocations.claimDue("A", at(3), at(3 + LEASE), 10);
    expect(await peer.delayedInvocations.cancel(held.id, null, at(4))).toBe(false);
    await store.delayedInvocations.markStarted("A", [{ id: started.id, executionId: "e" }], at(5));
    expect(await peer.delayedInvocations.cancel(started.id, null, at(6))).toBe(false);
    // The lease ran out without a start: it is pending and free again.
    expect(await peer.delayedInvocations.cancel(held.id, null, at(4 + LEASE))).toBe(true);
  });

  test("list: newest first, by principal and status, keyset-paged", async () => {
    const rows = [scheduledRow(0), scheduledRow(0, "bob"), scheduledRow(0), scheduledRow(0)];
    const [first, , third, fourth] = rows.map((r) => r.id) as [string, string, string, string];
    await store.delayedInvocations.insert(rows);
    await store.delayedInvocations.cancel(fourth, null, at(1));
    const alice = { kind: "user", id: "alice" } as const;
    const ids = (list: ScheduledRow[]) => list.map((r) => r.id);
    expect(ids(await store.delayedInvocations.list({ limit: 10 }))).toEqual(ids(rows).reverse());
    expect(ids(await store.delayedInvocations.list({ principal: alice, status: "pending", limit: 10 }))).toEqual([
      third,
      first,
    ]);
    expect(ids(await store.delayedInvocations.list({ principal: alice, beforeId: third, limit: 10 }))).toEqual([first]);
  });

  test("environments: reads, cancels, claims and the next due see their own; starts are by owner across them", async () => {
    const [one, two] = [store.delayedInvocations, peer.environment(2).delayedInvocations];
    const mine = scheduledRow(200);
    // The same request id and caller in the other environment: another invocation.
    const theirs = { ...scheduledRow(100), requestId: mine.requestId };
    await one.insert([mine]);
    await two.insert([theirs]);

    expect(await one.get(theirs.id)).toBeNull();
    expect(await two.get(mine.id)).toBeNull();
    expect(await two.get(theirs.id)).toEqual(theirs);
    expect((await one.list({ limit: 10 })).map((r) => r.id)).toEqual([mine.id]);
    expect(await two.list({ principal: { kind: "user", id: "alice" }, limit: 10 })).toEqual([theirs]);
    expect(await one.cancel(theirs.id, null, at(1))).toBe(false);
    expect(await two.get(theirs.id)).toMatchObject({ status: "pending" });
    // Each environment's loop wakes for its own.
    expect(await one.nextDueAt()).toBe(at(200));
    expect(await two.nextDueAt()).toBe(at(100));

    const claimedOne = await one.claimDue("A", at(1_000), at(1_000 + LEASE), 10);
    expect(claimedOne.map((r) => [r.id, r.environment])).toEqual([[mine.id, 1]]);
    const claimed = await two.claimDue("A", at(1_000), at(1_000 + LEASE), 10);
    expect(claimed.map((r) => [r.id, r.environment])).toEqual([[theirs.id, 2]]);
    expect(claimed[0]).toEqual({
      ...theirs,
      environment: 2,
      leaseOwner: "A",
      leaseExpiresAt: at(1_000 + LEASE),
      updatedAt: at(1_000),
    });
    const started = [
      { id: mine.id, executionId: "e-1" },
      { id: theirs.id, executionId: "e-2" },
    ];
    expect((await peer.delayedInvocations.markStarted("A", started, at(1_001))).sort()).toEqual(
      [mine.id, theirs.id].sort(),
    );
    expect(await one.get(mine.id)).toMatchObject({ status: "started", executionId: "e-1" });
    expect(await two.get(theirs.id)).toMatchObject({ status: "started", executionId: "e-2" });
    expect(await two.nextDueAt()).toBeNull();
  });
}
