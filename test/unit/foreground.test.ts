import { describe, expect, test } from "bun:test";
import { Foreground } from "../../src/lib/foreground.ts";

describe("Foreground: the requests background work on the serving thread waits for", () => {
  test("busy from a request's beginning to its end", () => {
    const gauge = new Foreground(100);
    expect(gauge.busy()).toBe(false);
    const first = gauge.begin();
    const second = gauge.begin();
    expect(gauge.busy()).toBe(true);
    gauge.end(first);
    expect(gauge.busy()).toBe(true);
    gauge.end(second);
    expect(gauge.busy()).toBe(false);
  });

  test("a request held open past youngMs (a long wait) is idle, a newer one is not", () => {
    const gauge = new Foreground(100);
    const at = performance.now();
    gauge.begin();
    expect(gauge.busy(at + 50)).toBe(true);
    expect(gauge.busy(at + 150)).toBe(false);
    gauge.begin();
    expect(gauge.busy()).toBe(true);
  });

  test("quiet() resolves once the request ends", async () => {
    const gauge = new Foreground(60_000);
    const request = gauge.begin();
    const order: string[] = [];
    const waited = gauge.quiet(60_000).then(() => order.push("quiet"));
    await Bun.sleep(5);
    order.push("end");
    gauge.end(request);
    await waited;
    expect(order).toEqual(["end", "quiet"]);
  });

  test("quiet() gives up after maxWaitMs: a server never idle still lets the work it delays move on", async () => {
    const gauge = new Foreground(60_000);
    gauge.begin();
    await gauge.quiet(5);
    expect(gauge.busy()).toBe(true);
  });

  test("giveWay() pauses, then waits for the request being answered", async () => {
    const gauge = new Foreground(60_000);
    const request = gauge.begin();
    const order: string[] = [];
    const waited = gauge.giveWay(60_000).then(() => order.push("gave way"));
    await Bun.sleep(5);
    order.push("end");
    gauge.end(request);
    await waited;
    expect(order).toEqual(["end", "gave way"]);
  });

  test("quiet() resolves at once when nothing is being answered", async () => {
    const gauge = new Foreground(60_000);
    let resolved = false;
    const waited = gauge.quiet(60_000).then(() => {
      resolved = true;
    });
    await Promise.resolve();
    await Promise.resolve();
    expect(resolved).toBe(true);
    await waited;
  });
});
