import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createClient, type StreamEvent } from "../../src/client/index.ts";
import { openGate } from "../fixtures/releases/basic/lib/probe.ts";
import { dialects } from "../support/databases.ts";
import { LiveClient } from "../support/live-client.ts";
import { pausableProxy } from "../support/pausable-proxy.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

// Bun holds at most 16 MiB a client has not read (beyond what the kernels buffer) and drops what is
// sent past that. The slow readers here sit behind a proxy that stops passing on what the server
// sends, and the server has several times that much to send them.

/** The value of one series in the Prometheus text of /metrics (0 when absent). */
async function metric(t: TestServer, series: string): Promise<number> {
  const text = await (await t.fetch("/metrics")).text();
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** Whether the server comes to hold bytes its /session clients have not read (asserted once the test's point is made). */
const unsentBytesHeld = (t: TestServer) =>
  eventually(async () => (await metric(t, "actuate_live_unsent_bytes")) > 0, 30_000).then(
    () => true,
    () => false,
  );

async function signedIn(url: string, token: string): Promise<LiveClient> {
  const client = await LiveClient.connect(url);
  client.send({ op: "init", "access-token": token });
  await client.op("init-ok");
  return client;
}

type Proxy = Awaited<ReturnType<typeof pausableProxy>>;

for (const dialect of dialects) {
  describe(`a live query's reader that stops reading (${dialect.name})`, () => {
    let t: TestServer;
    let proxy: Proxy;
    let alice: string;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("data") });
      proxy = await pausableProxy(Number(new URL(t.url).port));
      alice = await t.userToken("slow-reader");
      // 20 notes of 256 KiB: each result is 5 MiB and more.
      const body = "x".repeat(256 * 1024);
      for (let n = 1; n <= 20; n++) await addNote(`note ${n}`, body);
    }, 60_000);
    afterAll(async () => {
      proxy?.stop();
      await t?.stop();
    });

    const addNote = async (title: string, body: string) =>
      expect((await t.invoke("data.add-note", { title, priority: 1, body }, { token: alice })).status).toBe(200);
    const notesIn = (result: unknown) => (result as { notes: unknown[] }).notes.length;
    const refreshed = (m: Record<string, unknown>) =>
      notesIn((m.computations as Record<string, unknown>[])[0]?.["instaql-result"]);

    // The case: 8 notes written while the reader did not read. It missed 5 of the 8 refreshes
    // (Bun dropped them past 16 MiB) and showed 23 of 28 notes for good.
    test("gets the latest result once it reads again: results are held while it has unread bytes, the latest sent when it drained", async () => {
      const query = { op: "add-query", q: { notes: {} }, "return-type": "tree" };
      const reference = await signedIn(t.url, alice);
      const slow = await signedIn(proxy.url, alice);
      try {
        for (const client of [reference, slow]) {
          client.send(query);
          expect(notesIn((await client.op("add-query-ok")).result)).toBe(20);
        }
        proxy.pause();
        // One refresh pass per write: the reference reader, refreshed by the same pass, has each one.
        const body = "y".repeat(256 * 1024);
        for (let n = 21; n <= 28; n++) {
          await addNote(`note ${n}`, body);
          await reference.next((m) => m.op === "refresh-ok" && refreshed(m) === n, 30_000);
        }
        const backpressured = await unsentBytesHeld(t);
        proxy.resume();
        const seen: number[] = [];
        await slow
          .next((m) => m.op === "refresh-ok" && seen.push(refreshed(m)) > 0 && seen.at(-1) === 28, 30_000)
          .catch(() => {});
        expect(seen.at(-1)).toBe(28);
        expect(seen.length).toBeLessThan(8);
        expect(backpressured).toBe(true);
        expect(await metric(t, 'actuate_live_results_total{delivery="held"}')).toBeGreaterThan(0);
        expect(await metric(t, 'actuate_live_results_total{delivery="sent_late"}')).toBeGreaterThan(0);
      } finally {
        reference.close();
        slow.close();
      }
    }, 120_000);

    // As a client resubscribing after a reconnect does: every answer is due at once.
    test("gets the answer to every add-query it sent while not reading, each with its latest result", async () => {
      const slow = await signedIn(proxy.url, alice);
      try {
        proxy.pause();
        const limits = [28, 27, 26, 25, 24, 23, 22, 21];
        for (const limit of limits) {
          slow.send({
            op: "add-query",
            q: { notes: { $: { limit } } },
            "return-type": "tree",
            "client-event-id": limit,
          });
        }
        const backpressured = await unsentBytesHeld(t);
        proxy.resume();
        for (const limit of limits) {
          const answer = await slow.next((m) => m.op === "add-query-ok" && m["client-event-id"] === limit, 30_000);
          expect(notesIn(answer.result)).toBe(limit);
        }
        expect(slow.closed).toBeNull();
        expect(backpressured).toBe(true);
        expect(await metric(t, 'actuate_live_results_total{delivery="sent_late"}')).toBeGreaterThan(1);
      } finally {
        slow.close();
      }
    }, 120_000);
  });

  describe(`an execution stream's reader that stops reading (${dialect.name})`, () => {
    let t: TestServer;
    let proxy: Proxy;
    const logs: string[] = [];
    beforeAll(async () => {
      t = await startTestServer(dialect, {
        release: fixture("basic"),
        // Logs of 40 MB, kept whole.
        env: { WAIT_MS: "100", EXECUTION_LOG_BYTES: String(64 * 1024 * 1024) },
        log: (line) => logs.push(line),
      });
      proxy = await pausableProxy(Number(new URL(t.url).port));
    });
    afterAll(async () => {
      proxy?.stop();
      await t?.stop();
    });

    /** An execution that logged `lines` lines of `text` and waits at the gate. */
    const logging = async (gate: string, lines: number, text = "line") => {
      const answer = await t.invoke("test.logs", { lines, text, gate });
      expect(answer.status).toBe(202);
      return (await answer.json()).execution.id as string;
    };
    const followed = (client: LiveClient) => client.next((m) => m.op === "stream-append", 30_000);

    test("gets every line once, in order: the stream waits for it to read, and its socket stays open", async () => {
      const gate = crypto.randomUUID();
      const LINES = 400;
      const text = "z".repeat(100_000);
      const id = await logging(gate, LINES, text);
      const reference = await signedIn(t.url, t.serviceKey);
      const slow = await signedIn(proxy.url, t.serviceKey);
      try {
        proxy.pause();
        for (const client of [slow, reference]) client.send({ op: "subscribe-stream", "execution-id": id });
        for (let seq = 0; seq < LINES; seq++) await reference.next((m) => m.seq === seq, 30_000);
        const backpressured = await unsentBytesHeld(t);
        proxy.resume();
        expect(await followed(slow)).toMatchObject({ status: "running" });
        for (let seq = 0; seq < LINES; seq++) {
          const line = await followed(slow);
          expect(line.seq).toBe(seq);
          expect(String(line.log).startsWith(`${text} ${seq}`)).toBe(true);
        }
        openGate(gate);
        expect(await followed(slow)).toMatchObject({ log: "after the gate", seq: LINES });
        expect(await followed(slow)).toMatchObject({ status: "succeeded", done: true });
        expect(slow.closed).toBeNull();
        expect(backpressured).toBe(true);
      } finally {
        reference.close();
        slow.close();
      }
    }, 120_000);

    test("after-seq resumes a stream after a line: only the lines after it, then, for an ended execution, its end", async () => {
      const gate = crypto.randomUUID();
      const id = await logging(gate, 5);
      const client = await signedIn(t.url, t.serviceKey);
      try {
        client.send({ op: "subscribe-stream", "execution-id": id, "after-seq": "2" });
        expect(await client.op("error")).toMatchObject({ status: 400, error: "invalid_request" });
        client.send({ op: "subscribe-stream", "execution-id": id, "after-seq": 2 });
        expect(await followed(client)).toMatchObject({ status: "running" });
        expect(await followed(client)).toMatchObject({ seq: 3, log: "line 3" });
        expect(await followed(client)).toMatchObject({ seq: 4, log: "line 4" });
        openGate(gate);
        expect(await followed(client)).toMatchObject({ seq: 5, log: "after the gate" });
        expect(await followed(client)).toMatchObject({ status: "succeeded", done: true });
        // Ended: resumed, the lines after the one given, then the end; followed afresh, the end alone.
        client.send({ op: "subscribe-stream", "execution-id": id, "after-seq": 3 });
        expect(await followed(client)).toMatchObject({ seq: 4, log: "line 4" });
        expect(await followed(client)).toMatchObject({ seq: 5, log: "after the gate" });
        expect(await followed(client)).toMatchObject({ status: "succeeded", done: true });
        client.send({ op: "subscribe-stream", "execution-id": id });
        expect(await followed(client)).toMatchObject({ status: "succeeded", done: true });
      } finally {
        client.close();
      }
    });

    test("the client reconnects after its socket was cut and resumes the stream after its last line: each line once, and the end it missed", async () => {
      const gate = crypto.randomUUID();
      const id = await logging(gate, 3);
      const client = createClient({ url: proxy.url, token: t.serviceKey });
      const states: string[] = [];
      client.onConnectionChange((state) => states.push(state));
      const events: StreamEvent[] = [];
      const following = (async () => {
        for await (const event of client.executions.follow(id)) events.push(event);
      })();
      try {
        await eventually(() => events.filter((e) => e.log !== undefined).length === 3, 30_000);
        // The last line and the end are sent while the client hears nothing, and lost with the connection.
        proxy.pause();
        openGate(gate);
        expect((await t.fetch(`/executions/${id}/result`)).status).toBe(200);
        proxy.cut();
        proxy.resume();
        await following;
        expect(states.filter((s) => s === "open")).toHaveLength(2);
        const lines = events.filter((e) => e.log !== undefined).map((e) => [e.seq, e.log]);
        expect(lines).toEqual([
          [0, "line 0"],
          [1, "line 1"],
          [2, 'line 2 {"i":2}'],
          [3, "after the gate"],
        ]);
        expect(events.at(-1)).toMatchObject({ status: "succeeded", done: true });
      } finally {
        client.close();
      }
    }, 60_000);

    test("a client that keeps asking without reading is closed with 4013 once an answer would be dropped, not left to miss it", async () => {
      const slow = await signedIn(proxy.url, t.serviceKey);
      proxy.pause();
      // Each refusal repeats the message refused: 40 of 1 MB.
      const padding = "p".repeat(1024 * 1024);
      for (let n = 0; n < 40; n++) slow.send({ op: "no-such-op", padding, "client-event-id": n });
      await eventually(async () => (await metric(t, "actuate_live_sockets_fell_behind_total")) === 1, 60_000);
      proxy.resume();
      await slow.whenClosed();
      expect(slow.closed?.code).toBe(4013);
      const answered = slow.pending().map((m) => m["client-event-id"]);
      expect(answered).toEqual(answered.map((_, n) => n));
      expect(answered.length).toBeLessThan(40);
      expect(logs.some((line) => line.includes("closed (4013): the client left"))).toBe(true);
    }, 120_000);
  });
}
