import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import postgres from "postgres";
import { type ActuateError, createClient, type Invocation } from "../../src/client/index.ts";
import { CREATED_CHANNEL } from "../../src/store/pg/list-watchers.ts";
import { openGate } from "../fixtures/releases/basic/lib/probe.ts";
import { dialects } from "../support/databases.ts";
import { startHostingServer } from "../support/hosting.ts";
import { LiveClient } from "../support/live-client.ts";
import { eventually, fixture, startPeer, startTestServer, type TestServer } from "../support/server.ts";

type Item = { id: string; status: string; action?: string; workflow?: string; statusUrl: string; updatedAt?: string };

/** A signed-in socket; its live lists' pushes are taken with `pushed`. */
async function signedIn(url: string, token: string, clients: LiveClient[]) {
  const client = await LiveClient.connect(url);
  clients.push(client);
  client.send({ op: "init", "access-token": token });
  await client.op("init-ok");
  return client;
}

async function subscribe(client: LiveClient, kind: "executions" | "runs", id: string, filter?: unknown) {
  client.send({ op: `subscribe-${kind}`, "subscription-id": id, filter, "client-event-id": `sub-${id}` });
  expect(await client.op(`subscribe-${kind}-ok`)).toMatchObject({
    "subscription-id": id,
    "client-event-id": `sub-${id}`,
  });
}

/** The items pushed under `subscriptionId` until one with this id (and status, when given) arrives: all of them. */
async function pushedUntil(
  client: LiveClient,
  subscriptionId: string,
  id: string,
  status?: string,
  kind: "executions" | "runs" = "executions",
): Promise<Item[]> {
  const seen: Item[] = [];
  for (;;) {
    const message = await client.next((m) => m.op === `${kind}-changed` && m["subscription-id"] === subscriptionId);
    seen.push(...(message.items as Item[]));
    if (seen.some((item) => item.id === id && (status === undefined || item.status === status))) return seen;
  }
}

const gatedCount = (gate: string) => ({ key: crypto.randomUUID(), gate });

for (const dialect of dialects) {
  describe(`subscribe-executions and subscribe-runs on /session (${dialect.name})`, () => {
    let t: TestServer;
    let alice: string;
    let bob: string;
    const clients: LiveClient[] = [];

    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic"), env: { WAIT_MS: "100" } });
      alice = await t.userToken("alice");
      bob = await t.userToken("bob");
    });
    afterAll(async () => {
      for (const client of clients) client.close();
      await t.stop();
    });

    test("a new execution invoked over HTTP is pushed, as GET /executions lists it, and then its end", async () => {
      const client = await signedIn(t.url, t.serviceKey, clients);
      await subscribe(client, "executions", "all");
      const gate = crypto.randomUUID();
      const answer = await t.invoke("test.count", gatedCount(gate));
      expect(answer.status).toBe(202);
      const { id } = (await answer.json()).execution;
      const running = (await pushedUntil(client, "all", id, "running")).find((item) => item.id === id);
      const listed = (await (await t.fetch("/executions?limit=1")).json()).items[0];
      expect(running).toEqual({ ...listed, status: "running" });
      openGate(gate);
      const ended = (await pushedUntil(client, "all", id, "succeeded")).find((item) => item.id === id);
      expect(ended).toEqual((await (await t.fetch("/executions?limit=1")).json()).items[0]);
      expect(ended?.statusUrl).toBe(`${t.url}/executions/${id}`);
    });

    test("a new execution of this process is told to the lists once stored, with its row, not left to their poll", async () => {
      const heard: { id: string; status?: string }[] = [];
      const stop = t.server.engine.feed.watchAll(({ id, row }) => heard.push({ id, status: row?.status }));
      try {
        const gate = crypto.randomUUID();
        const answer = await t.invoke("test.count", gatedCount(gate));
        const { id } = (await answer.json()).execution;
        // Still running (the gate is shut): only the birth can have been told, and it came with its row.
        await eventually(() => heard.some((change) => change.id === id));
        expect(heard.filter((change) => change.id === id)).toEqual([{ id, status: "running" }]);
        openGate(gate);
        await eventually(() => heard.some((change) => change.id === id && change.status === "succeeded"));
      } finally {
        stop();
      }
    });

    test("a failed execution is pushed as failed; the filter keeps only what it names", async () => {
      const client = await signedIn(t.url, t.serviceKey, clients);
      await subscribe(client, "executions", "everything");
      await subscribe(client, "executions", "failures", { action: "test.fail", status: "failed" });
      const echoed = (await (await t.invoke("test.echo", { text: "hi" })).json()).execution.id;
      await pushedUntil(client, "everything", echoed);
      const failed = (await (await t.invoke("test.fail", { message: "no" })).json()).execution.id;
      // Pushed to both in the same pass: once the unfiltered one has it, the filtered one had its chance at echo too.
      await pushedUntil(client, "everything", failed);
      const kept = await pushedUntil(client, "failures", failed);
      expect(kept.map((item) => [item.id, item.action, item.status])).toEqual([[failed, "test.fail", "failed"]]);
    });

    test("a list filtered by status is told which rows moved to another status (left), not pushed them", async () => {
      const client = await signedIn(t.url, t.serviceKey, clients);
      await subscribe(client, "executions", "all");
      await subscribe(client, "executions", "running", { status: "running" });
      await subscribe(client, "executions", "echoes", { action: "test.echo", status: "running" });
      const gate = crypto.randomUUID();
      const { id } = (await (await t.invoke("test.count", gatedCount(gate))).json()).execution;
      await pushedUntil(client, "running", id, "running");
      openGate(gate);
      const ended = await client.next(
        (m) => m.op === "executions-changed" && m["subscription-id"] === "running" && m.left !== undefined,
      );
      expect(ended.left).toEqual([id]);
      expect((ended.items as Item[]).map((item) => item.id)).not.toContain(id);
      // A list without a status filter is pushed the row itself, never a `left`.
      for (;;) {
        const message = await client.next((m) => m.op === "executions-changed" && m["subscription-id"] === "all");
        expect(message.left).toBeUndefined();
        if ((message.items as Item[]).some((item) => item.id === id && item.status === "succeeded")) break;
      }
      // A row the rest of the filter leaves out (another action) is not named: that list was told nothing.
      expect(await client.next((m) => m["subscription-id"] === "echoes", 300).catch(() => null)).toBeNull();
    });

    test("a row older than the feed's memory (its 5 s lookback) leaves a status-filtered list all the same", async () => {
      const client = await signedIn(t.url, t.serviceKey, clients);
      await subscribe(client, "executions", "long", { status: "running" });
      const gate = crypto.randomUUID();
      const { id } = (await (await t.invoke("test.count", gatedCount(gate))).json()).execution;
      await pushedUntil(client, "long", id, "running");
      // Time itself is what this test needs to pass: the feed forgets a row's last status past its lookback.
      await Bun.sleep(5_500);
      openGate(gate);
      const ended = await client.next(
        (m) => m.op === "executions-changed" && m["subscription-id"] === "long" && m.left?.includes(id),
      );
      expect((ended.items as Item[]).map((item) => item.id)).not.toContain(id);
    }, 30_000);

    test("a user is pushed only their own executions; a service key everyone's", async () => {
      const own = await signedIn(t.url, alice, clients);
      const all = await signedIn(t.url, t.serviceKey, clients);
      await subscribe(own, "executions", "mine");
      await subscribe(all, "executions", "theirs");
      const bobs = (await (await t.invoke("test.echo", { text: "bob" }, { token: bob })).json()).execution.id;
      await pushedUntil(all, "theirs", bobs);
      const alices = (await (await t.invoke("test.echo", { text: "alice" }, { token: alice })).json()).execution.id;
      await pushedUntil(all, "theirs", alices);
      const seen = await pushedUntil(own, "mine", alices);
      expect(seen.map((item) => item.id)).toEqual([alices]);
    });

    test("malformed subscribe messages get an error op and the socket stays usable", async () => {
      const client = await signedIn(t.url, alice, clients);
      const refusals: [unknown, number, string][] = [
        [{ op: "subscribe-executions" }, 400, "invalid_request"],
        [{ op: "subscribe-executions", "subscription-id": 7 }, 400, "invalid_request"],
        [{ op: "subscribe-executions", "subscription-id": "x", filter: "all" }, 400, "invalid_request"],
        [{ op: "subscribe-executions", "subscription-id": "x", filter: { colour: "red" } }, 400, "invalid_request"],
        [
          { op: "subscribe-executions", "subscription-id": "x", filter: { status: "sleeping" } },
          400,
          "invalid_request",
        ],
        [{ op: "subscribe-runs", "subscription-id": "x", filter: { action: "test.echo" } }, 400, "invalid_request"],
        [{ op: "subscribe-executions", "subscription-id": "x", filter: { caller: "user:bob" } }, 403, "access_denied"],
        [{ op: "unsubscribe" }, 400, "invalid_request"],
      ];
      for (const [message, status, error] of refusals) {
        client.send({ ...(message as object), "client-event-id": "bad" });
        expect(await client.op("error")).toMatchObject({
          status,
          error,
          "client-event-id": "bad",
          "original-event": message,
        });
      }
      await subscribe(client, "executions", "x");
      client.send({ op: "subscribe-executions", "subscription-id": "x" });
      expect(await client.op("error")).toMatchObject({ status: 400, error: "invalid_request" });
      const id = (await (await t.invoke("test.echo", { text: "still" }, { token: alice })).json()).execution.id;
      await pushedUntil(client, "x", id);
    });

    test("unsubscribe with an execution-id ends that execution's stream", async () => {
      const client = await signedIn(t.url, t.serviceKey, clients);
      await subscribe(client, "executions", "ends");
      const gate = crypto.randomUUID();
      const { id } = (await (await t.invoke("test.count", gatedCount(gate))).json()).execution;
      client.send({ op: "subscribe-stream", "execution-id": id });
      expect(await client.op("stream-append")).toMatchObject({ "execution-id": id, status: "running" });
      client.send({ op: "unsubscribe", "execution-id": id.toUpperCase() });
      expect(await client.op("unsubscribe-ok")).toMatchObject({ "execution-id": id.toUpperCase() });
      openGate(gate);
      // The stream would have sent the end before the list's pass (which reads the uploads) pushes it.
      await pushedUntil(client, "ends", id, "succeeded");
      expect(client.pending().filter((m) => m.op === "stream-append")).toEqual([]);
    });

    test("arbitrary subscribe and unsubscribe messages are each answered, none with a 500; the socket stays usable", async () => {
      const client = await signedIn(t.url, alice, clients);
      const messages = fc.sample(
        fc.record(
          {
            op: fc.constantFrom("subscribe-executions", "subscribe-runs", "unsubscribe"),
            "subscription-id": fc.oneof(fc.string({ maxLength: 300 }), fc.jsonValue()),
            "execution-id": fc.oneof(fc.uuid(), fc.string()),
            filter: fc.oneof(
              fc.jsonValue(),
              fc.dictionary(fc.constantFrom("action", "status", "caller", "workflow", "since"), fc.jsonValue()),
            ),
          },
          { requiredKeys: ["op"] },
        ),
        { numRuns: 200 },
      );
      for (const [n, message] of messages.entries()) {
        client.send({ ...message, "client-event-id": `fuzz-${n}` });
        const answer = await client.next((m) => m["client-event-id"] === `fuzz-${n}`);
        if (answer.op === "error") expect([400, 403, 429]).toContain(answer.status);
        else expect(answer.op).toBe(`${message.op}-ok`);
      }
      expect(client.closed).toBeNull();
      await subscribe(client, "executions", "after the fuzz");
    });

    test("unsubscribe stops the pushes of that list only", async () => {
      const client = await signedIn(t.url, t.serviceKey, clients);
      await subscribe(client, "executions", "kept");
      await subscribe(client, "executions", "dropped");
      client.send({ op: "unsubscribe", "subscription-id": "dropped", "client-event-id": "u" });
      expect(await client.op("unsubscribe-ok")).toMatchObject({ "subscription-id": "dropped", "client-event-id": "u" });
      const id = (await (await t.invoke("test.echo", { text: "after" })).json()).execution.id;
      await pushedUntil(client, "kept", id);
      expect(client.pending().filter((m) => m["subscription-id"] === "dropped")).toEqual([]);
    });
  });

  describe(`client.executions.subscribe (${dialect.name})`, () => {
    let t: TestServer;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic") });
    });
    afterAll(() => t.stop());

    test("hands over each new execution the filter keeps until stopped; a refused filter calls onError", async () => {
      const client = createClient({ url: t.url, token: t.serviceKey });
      try {
        const seen: { id: string; action: string; status: string }[] = [];
        const stop = client.executions.subscribe({ action: "test.echo" }, (items) => {
          seen.push(...(items as { id: string; action: string; status: string }[]));
        });
        const refused = new Promise<ActuateError>((resolve) =>
          client.runs.subscribe({ status: "nope" as never }, () => {}, resolve),
        );
        expect(await refused).toMatchObject({ code: "invalid_request", status: 400 });
        await t.invoke("test.fail", { message: "left out" });
        const { output, execution } = (await client.invoke("test.echo", { text: "pushed" })) as Invocation<unknown>;
        expect(output).toEqual({ text: "pushed" });
        // Each of its states as it reaches it (running, when stored, then succeeded); nothing of test.fail.
        await eventually(() => seen.some((item) => item.status === "succeeded"));
        expect(new Set(seen.map((item) => item.id))).toEqual(new Set([execution.id]));
        stop();
      } finally {
        client.close();
      }
    });

    test("with a status filter, hands over the ids of executions that moved to another status", async () => {
      const client = createClient({ url: t.url, token: t.serviceKey });
      try {
        const running: string[] = [];
        const left: string[] = [];
        const stop = client.executions.subscribe({ status: "running" }, (items, gone) => {
          running.push(...items.map((item) => item.id));
          left.push(...gone);
        });
        const gate = crypto.randomUUID();
        // Answered at its end (this server waits for results): the list names it running before that.
        const answer = t.invoke("test.count", gatedCount(gate));
        await eventually(() => running.length > 0);
        const [id] = running;
        expect(left).not.toContain(id);
        openGate(gate);
        expect((await answer).status).toBe(200);
        await eventually(() => left.includes(id as string));
        expect(running).toEqual([id as string]);
        stop();
      } finally {
        client.close();
      }
    });
  });

  describe(`subscribe-runs (${dialect.name})`, () => {
    let t: TestServer;
    const clients: LiveClient[] = [];
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("workflows") });
    });
    afterAll(async () => {
      for (const client of clients) client.close();
      await t.stop();
    });

    test("a runs list filtered by status is told when a run leaves that status", async () => {
      const client = await signedIn(t.url, t.serviceKey, clients);
      await subscribe(client, "runs", "sleeping", { status: "sleeping" });
      const { id } = (await (await t.invoke("wf.nap", { ms: 300 })).json()).execution;
      await pushedUntil(client, "sleeping", id, "sleeping", "runs");
      const woke = await client.next(
        (m) => m.op === "runs-changed" && m["subscription-id"] === "sleeping" && m.left !== undefined,
      );
      expect(woke.left).toEqual([id]);
    }, 30_000);

    test("a run started over HTTP is pushed as GET /runs lists it, until it ends", async () => {
      const client = await signedIn(t.url, t.serviceKey, clients);
      await subscribe(client, "runs", "runs", { workflow: "wf.steps" });
      const answer = await (await t.invoke("wf.steps", { n: 1 })).json();
      const id = answer.execution.id as string;
      const pushed = (await pushedUntil(client, "runs", id, "succeeded", "runs")).filter((run) => run.id === id);
      const listed = (await (await t.fetch("/runs?limit=1")).json()).items[0];
      expect(pushed.at(-1)).toEqual(listed);
      // Pushed in the order the run changed: a batch that read less (a run's wake carries no execution
      // and reads no uploads) never overtakes an earlier one, which would leave the list on an older state.
      const times = pushed.map((run) => run.updatedAt);
      expect(times).toEqual([...times].sort());
    }, 30_000);
  });
}

const postgresDialect = dialects.find((d) => d.name === "postgres");

/**
 * Two instances on one PostgreSQL database, `a` a test server and `b` its peer, given to `use` with the
 * sockets it opens (`clients`), all closed after.
 */
async function withTwoInstances(
  use: (a: TestServer, b: Awaited<ReturnType<typeof startPeer>>, clients: LiveClient[]) => Promise<void>,
) {
  const a = await startTestServer(postgresDialect as (typeof dialects)[number], {
    release: fixture("basic"),
    env: { WAIT_MS: "100" },
  });
  const b = await startPeer(a);
  const clients: LiveClient[] = [];
  try {
    await use(a, b, clients);
  } finally {
    for (const client of clients) client.close();
    await b.stop();
    await a.stop();
  }
}

describe.skipIf(!postgresDialect)("live lists across instances (postgres)", () => {
  test("an execution invoked on one server reaches a subscriber of another: new (running) and ended", async () => {
    await withTwoInstances(async (a, b, clients) => {
      const client = await signedIn(b.url, a.serviceKey, clients);
      await subscribe(client, "executions", "there");
      const gate = crypto.randomUUID();
      const { id } = (await (await a.invoke("test.count", gatedCount(gate))).json()).execution;
      await pushedUntil(client, "there", id, "running");
      openGate(gate);
      const ended = (await pushedUntil(client, "there", id, "succeeded")).find((item) => item.id === id);
      expect(ended?.statusUrl).toBe(`${b.url}/executions/${id}`);
    });
  }, 30_000);

  test("a new execution reaches another instance watching a list when it is stored, not at that list's poll", async () => {
    await withTwoInstances(async (a, b, clients) => {
      // What b's feed hears comes from the database (the list's poll of rows feeds the list, not the feed).
      const heard: string[] = [];
      const feed = b.server.engine?.feed;
      if (!feed) throw new Error("a server in single mode has one engine");
      const stopHearing = feed.watchAll(({ id }) => heard.push(id));
      const client = await signedIn(b.url, a.serviceKey, clients);
      await subscribe(client, "executions", "watched");
      // a learns that b watches a list from b's announcement: until then its new rows reach b by the poll.
      await eventually(async () => {
        const gate = crypto.randomUUID();
        const { id } = (await (await a.invoke("test.count", gatedCount(gate))).json()).execution;
        // Still running (its row is not updated before its end): only word of the insert can have been heard.
        const heardRunning = await eventually(() => heard.includes(id), 1_000).catch(() => false);
        openGate(gate);
        return heardRunning;
      }, 15_000);
      stopHearing();
    });
  }, 30_000);

  test("no word of new executions goes out while no other process watches a list", async () => {
    await withTwoInstances(async (a, b, clients) => {
      const outside = postgres(a.config.databaseUrl, { max: 1, onnotice: () => {} });
      try {
        const words: string[] = [];
        await outside.listen(CREATED_CHANNEL, (payload) => words.push(payload));
        /** The words sent for `invokes` executions made on a: a marker sent after them arrives after them. */
        const wordsFor = async (invokes: number) => {
          words.length = 0;
          for (let i = 0; i < invokes; i++) await a.invoke("test.echo", { text: `${i}` });
          const marker = crypto.randomUUID();
          await outside.notify(CREATED_CHANNEL, marker);
          await eventually(() => words.includes(marker));
          return words.filter((word) => word !== marker);
        };
        expect(await wordsFor(3)).toEqual([]);
        const client = await signedIn(b.url, a.serviceKey, clients);
        await subscribe(client, "executions", "watched");
        await eventually(async () => (await wordsFor(1)).length === 1);
        client.send({ op: "unsubscribe", "subscription-id": "watched" });
        await client.op("unsubscribe-ok");
        await eventually(async () => (await wordsFor(1)).length === 0);
        expect(await wordsFor(3)).toEqual([]);
      } finally {
        await outside.end();
      }
    });
  }, 30_000);
});

describe("live lists in hosting mode", () => {
  test("a subscriber of one environment is never pushed another's executions", async () => {
    const dialect = postgresDialect ?? (dialects[0] as (typeof dialects)[number]);
    const hosting = await startHostingServer(dialect, {
      environments: [
        { handle: "acme-one", organization: "acme", release: fixture("basic") },
        { handle: "acme-two", organization: "acme", release: fixture("basic") },
      ],
    });
    const clients: LiveClient[] = [];
    try {
      const one = await hosting.key({ environment: "acme-one" });
      const client = await signedIn(hosting.at("acme-one"), one, clients);
      await subscribe(client, "executions", "one");
      const two = await hosting.key({ environment: "acme-two" });
      const elsewhere = await hosting.invoke("acme-two", "test.echo", { text: "two" }, { token: two });
      expect(elsewhere.status).toBe(200);
      const here = (await (await hosting.invoke("acme-one", "test.echo", { text: "one" }, { token: one })).json())
        .execution.id;
      const seen = await pushedUntil(client, "one", here);
      expect(seen.map((item) => item.id)).toEqual([here]);
    } finally {
      for (const client of clients) client.close();
      await hosting.stop();
    }
  }, 30_000);
});
