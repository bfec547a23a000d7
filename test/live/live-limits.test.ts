import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dialects } from "../support/databases.ts";
import { LiveClient } from "../support/live-client.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

describe("live query limits", () => {
  let t: TestServer;
  const open: LiveClient[] = [];
  beforeAll(async () => {
    t = await startTestServer(dialects[0] as (typeof dialects)[number], {
      release: fixture("data"),
      env: {
        LIVE_MAX_SUBSCRIPTIONS_PER_SOCKET: "3",
        LIVE_MAX_SUBSCRIPTIONS_PER_CALLER: "5",
        LIVE_MAX_SOCKETS_PER_CALLER: "2",
      },
    });
  });
  afterAll(async () => {
    for (const client of open) client.close();
    await t.stop();
  });

  const signIn = async (token: string) => {
    const client = await LiveClient.connect(t.url);
    open.push(client);
    client.send({ op: "init", "access-token": token });
    return { client, answer: await client.next((m) => m.op === "init-ok" || m.op === "error") };
  };
  const add = async (client: LiveClient, n: number) => {
    client.send({ op: "add-query", q: { notes: { $: { limit: n } } }, "client-event-id": `q${n}` });
    return client.next(
      (m) => m["client-event-id"] === `q${n}` || (m.op === "add-query-ok" && m.q?.notes?.$?.limit === n),
    );
  };

  test("a socket holds at most LIVE_MAX_SUBSCRIPTIONS_PER_SOCKET queries; removing one makes room", async () => {
    const alice = await t.userToken("limits-alice");
    const { client } = await signIn(alice);
    for (const n of [1, 2, 3]) expect((await add(client, n)).op).toBe("add-query-ok");
    const refused = await add(client, 4);
    expect(refused).toMatchObject({ op: "error", status: 429 });
    expect(String(refused.message)).toContain("LIVE_MAX_SUBSCRIPTIONS_PER_SOCKET");
    client.send({ op: "remove-query", q: { notes: { $: { limit: 1 } } } });
    await client.op("remove-query-ok");
    expect((await add(client, 4)).op).toBe("add-query-ok");
  });

  test("a caller holds at most LIVE_MAX_SUBSCRIPTIONS_PER_CALLER across its sockets, and LIVE_MAX_SOCKETS_PER_CALLER sockets", async () => {
    const bob = await t.userToken("limits-bob");
    const first = await signIn(bob);
    const second = await signIn(bob);
    for (const n of [1, 2, 3]) expect((await add(first.client, n)).op).toBe("add-query-ok");
    for (const n of [1, 2]) expect((await add(second.client, n)).op).toBe("add-query-ok");
    expect(await add(second.client, 3)).toMatchObject({ op: "error", status: 429 });

    const third = await signIn(bob);
    expect(third.answer).toMatchObject({ op: "error", status: 429 });
    await third.client.whenClosed();
    expect(third.client.closed?.code).toBe(4029);

    // Another caller is not held back by bob's load.
    const carol = await signIn(await t.userToken("limits-carol"));
    expect(carol.answer.op).toBe("init-ok");
    expect((await add(carol.client, 1)).op).toBe("add-query-ok");

    // A socket that goes frees its share.
    first.client.close();
    await first.client.whenClosed();
    const again = await signIn(bob);
    expect(again.answer.op).toBe("init-ok");
    for (const n of [1, 2, 3]) expect((await add(again.client, n)).op).toBe("add-query-ok");
  });
});

describe("live refreshes under overload", () => {
  let t: TestServer;
  const open: LiveClient[] = [];
  beforeAll(async () => {
    t = await startTestServer(dialects[0] as (typeof dialects)[number], {
      release: fixture("data"),
      env: { LIVE_REFRESH_BUDGET: "2", LIVE_OVERLOAD_REFRESH_MS: "1000" },
    });
  });
  afterAll(async () => {
    for (const client of open) client.close();
    await t.stop();
  });

  const subscribe = async (token: string, limits: number[]) => {
    const client = await LiveClient.connect(t.url);
    open.push(client);
    client.send({ op: "init", "access-token": token });
    await client.op("init-ok");
    for (const limit of limits) {
      client.send({ op: "add-query", q: { notes: { $: { limit } } }, "return-type": "tree" });
      await client.op("add-query-ok");
    }
    return client;
  };
  /** How many notes each query's latest result holds, as the refreshes received so far tell it. */
  const latest = new Map<number, number>();
  const take = (refresh: Record<string, unknown>) => {
    const computations = refresh.computations as {
      "instaql-query": { notes: { $: { limit: number } } };
      "instaql-result": { notes: unknown[] };
    }[];
    for (const c of computations) latest.set(c["instaql-query"].notes.$.limit, c["instaql-result"].notes.length);
    return [...latest.values()];
  };

  test("writes that call for more runs than LIVE_REFRESH_BUDGET are refreshed once per LIVE_OVERLOAD_REFRESH_MS, and the last state still arrives", async () => {
    const dana = await t.userToken("overload-dana");
    // Three queries, three runs per write: over the budget of two.
    const client = await subscribe(dana, [100, 101, 102]);
    const started = performance.now();
    const writes = 20;
    for (let i = 0; i < writes; i++) {
      expect((await t.invoke("data.add-note", { title: `w${i}`, priority: i }, { token: dana })).status).toBe(200);
    }
    // A pass is not a snapshot: a write may land between two of its runs; the next pass sends the rest.
    let refreshes = 0;
    for (;;) {
      refreshes += 1;
      const counts = take(await client.op("refresh-ok", 10_000));
      if (counts.length === 3 && counts.every((n) => n === writes)) break;
    }
    const elapsed = performance.now() - started;
    // One pass at once, then at most one per second however many writes (one per write otherwise).
    expect(refreshes).toBeLessThanOrEqual(1 + Math.ceil(elapsed / 1000));
    expect(refreshes).toBeLessThan(writes / 2);
  }, 30_000);
});
