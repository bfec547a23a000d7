import { describe, expect, test } from "bun:test";
import { merged, type Pushes, withPush } from "../../src/console/live-list.ts";
import type { Page } from "../../src/wire/views.ts";

type Row = { id: string; createdAt: string; status: string };

const row = (n: number, status = "running"): Row => ({
  id: `id-${String(n).padStart(8, "0")}`,
  createdAt: new Date(Date.UTC(2026, 10, 29) + n * 1000).toISOString(),
  status,
});
const page = (rows: Row[]): Page<Row> => ({ items: rows, nextCursor: null });
const none = (): Pushes<Row> => ({ rows: [], left: new Set() });

describe("a live list's pushes, applied to its page", () => {
  test("a list open for thousands of pushes keeps what can still show, and shows what it did unbounded", () => {
    const read = page([row(3), row(2), row(1)]);
    let bounded = none();
    let unbounded = none();
    for (let n = 4; n < 3_000; n++) {
      // New rows, a page row changing now and then, and page rows leaving and coming back.
      const items = [row(n), ...(n % 7 === 0 ? [row(2, `s${n}`)] : [])];
      const gone = n % 11 === 0 ? [row(1).id, row(n - 1).id] : [];
      bounded = withPush(bounded, items, gone, read, {});
      unbounded = withPush(unbounded, items, gone, undefined, {});
      expect(merged(read, bounded, {})).toEqual(merged(read, unbounded, {}));
    }
    expect(unbounded.rows.length).toBeGreaterThan(2_500);
    // The newest 50 new rows and the page's own rows, at most; gone ids only of the page's rows.
    expect(bounded.rows.length).toBeLessThanOrEqual(50 + read.items.length);
    expect([...bounded.left].every((id) => read.items.some((r) => r.id === id))).toBe(true);
  });

  test("pushes before the page is read are all kept, then applied to it", () => {
    let pushes = none();
    for (let n = 10; n < 200; n++) pushes = withPush(pushes, [row(n)], [], undefined, {});
    pushes = withPush(pushes, [], [row(1).id], undefined, {});
    expect(pushes.rows).toHaveLength(190);
    const shown = merged(page([row(2), row(1)]), pushes, {});
    expect(shown.items.map((r) => r.id)).toEqual(Array.from({ length: 50 }, (_, i) => row(199 - i).id));
  });

  test("a row that left and is pushed again shows again; since/until keep new rows out of the count", () => {
    const read = page([row(2), row(1)]);
    let pushes = withPush(none(), [], [row(1).id], read, {});
    expect(merged(read, pushes, {}).items.map((r) => r.id)).toEqual([row(2).id]);
    pushes = withPush(pushes, [row(1, "running")], [], read, {});
    expect(merged(read, pushes, {}).items.map((r) => r.id)).toEqual([row(2).id, row(1).id]);
    const until = { until: row(100).createdAt };
    let filtered = none();
    for (let n = 3; n < 200; n++) filtered = withPush(filtered, [row(n)], [], read, until);
    // Rows past `until` never show, so they do not take the places of those that do.
    expect(merged(read, filtered, until).items.map((r) => r.id)).toEqual(
      Array.from({ length: 50 }, (_, i) => row(99 - i).id),
    );
  });
});
