import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { revokeUserToken } from "../../src/auth/tokens.ts";
import { openGate } from "../fixtures/releases/basic/lib/probe.ts";
import { dialects } from "../support/databases.ts";
import { LiveClient } from "../support/live-client.ts";
import { fixture, startPeer, startTestServer, type TestServer } from "../support/server.ts";

for (const dialect of dialects) {
  describe(`live queries on /session (${dialect.name})`, () => {
    let t: TestServer;
    let alice: string;
    let bob: string;
    const clients: LiveClient[] = [];
    const connect = async (token: string) => {
      const client = await LiveClient.connect(t.url);
      clients.push(client);
      client.send({ op: "init", "access-token": token, "client-event-id": "init-1" });
      const ok = await client.op("init-ok");
      expect(ok["client-event-id"]).toBe("init-1");
      return client;
    };
    const addNote = async (token: string, title: string) => {
      const body = await (await t.invoke("data.add-note", { title, priority: 1 }, { token })).json();
      expect(body.execution.status).toBe("succeeded");
      return body.execution.output.id as string;
    };

    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("data") });
      alice = await t.userToken("alice");
      bob = await t.userToken("bob");
    });
    afterAll(async () => {
      for (const client of clients) client.close();
      await t.stop();
    });

    test("nothing but init is accepted first; init-ok carries the attrs", async () => {
      const client = await LiveClient.connect(t.url);
      clients.push(client);
      client.send({ op: "add-query", q: { notes: {} }, "client-event-id": "early" });
      expect(await client.op("error")).toMatchObject({
        status: 400,
        "client-event-id": "early",
        "original-event": { op: "add-query" },
      });
      client.send({ op: "init", "access-token": "wrong" });
      expect((await client.op("error")).status).toBe(401);
      client.send({ op: "init", "access-token": alice, "client-event-id": "i" });
      const ok = await client.op("init-ok");
      expect(ok.attrs.map((a: { "forward-identity": string[] }) => a["forward-identity"].slice(1).join("."))).toContain(
        "notes.title",
      );
    });

    test("a second init with a fresh token of the same caller keeps the session; another caller is refused", async () => {
      const first = await t.userToken("alice");
      const client = await connect(first);
      client.send({ op: "add-query", q: { notes: {} }, "return-type": "tree", "client-event-id": "q" });
      await client.op("add-query-ok");
      const fresh = await t.userToken("alice");
      client.send({ op: "init", "access-token": fresh, "client-event-id": "again" });
      expect(await client.op("init-ok")).toMatchObject({
        "client-event-id": "again",
        auth: { principal: { id: "alice" } },
      });
      client.send({ op: "init", "access-token": bob, "client-event-id": "bob" });
      expect(await client.op("error")).toMatchObject({ status: 403, error: "access_denied", "client-event-id": "bob" });
      // The session now lives on the fresh token: revoking it (not the first one) ends the session.
      await revokeUserToken(t.store, fresh);
      await client.whenClosed();
      expect(client.closed?.code).toBe(4001);
    }, 20_000);

    test("an Authorization header signs the socket in on the upgrade: init without a token is init-ok as that caller", async () => {
      const client = await LiveClient.connect(t.url, { authorization: `Bearer ${alice}` });
      clients.push(client);
      // init stays the first message.
      client.send({ op: "add-query", q: { notes: {} }, "client-event-id": "early" });
      expect(await client.op("error")).toMatchObject({ status: 400, "client-event-id": "early" });
      // Its access-token, when sent, must name the header's caller.
      client.send({ op: "init", "access-token": bob, "client-event-id": "bob" });
      expect(await client.op("error")).toMatchObject({ status: 403, error: "access_denied", "client-event-id": "bob" });
      client.send({ op: "init", "client-event-id": "header" });
      expect(await client.op("init-ok")).toMatchObject({
        "client-event-id": "header",
        auth: { principal: { kind: "user", id: "alice" } },
      });
      client.send({ op: "init", "access-token": await t.userToken("alice"), "client-event-id": "same" });
      expect(await client.op("init-ok")).toMatchObject({ "client-event-id": "same" });
      client.send({ op: "add-query", q: { notes: {} }, "client-event-id": "q" });
      expect(await client.op("add-query-ok")).toMatchObject({ "client-event-id": "q" });
    });

    test("a refused bearer header is 401 before the upgrade; another scheme is left to init", async () => {
      const upgrade = {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
      };
      const refused = await t.fetch("/session", { headers: upgrade, token: "not-a-token" });
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
      expect(await refused.json()).toMatchObject({ ok: false, error: "unauthorized" });
      await expect(LiveClient.connect(t.url, { authorization: "Bearer not-a-token" })).rejects.toBeDefined();

      const basic = await LiveClient.connect(t.url, { authorization: "Basic dXNlcjpwYXNz" });
      clients.push(basic);
      basic.send({ op: "init", "client-event-id": "no-token" });
      expect(await basic.op("error")).toMatchObject({
        status: 401,
        error: "unauthorized",
        "client-event-id": "no-token",
      });
    });

    test("a socket signed in by its header is closed when that token is revoked", async () => {
      const token = await t.userToken("alice");
      const client = await LiveClient.connect(t.url, { authorization: `Bearer ${token}` });
      clients.push(client);
      client.send({ op: "init" });
      await client.op("init-ok");
      await revokeUserToken(t.store, token);
      await client.whenClosed();
      expect(client.closed?.code).toBe(4001);
    }, 20_000);

    test("add-query answers the result; the same q again is add-query-exists; remove-query stops it", async () => {
      const client = await connect(alice);
      client.send({ op: "add-query", q: { notes: {} }, "return-type": "tree", "client-event-id": "q1" });
      const ok = await client.op("add-query-ok");
      expect(ok).toMatchObject({ q: { notes: {} }, "client-event-id": "q1" });
      expect(Array.isArray(ok.result.notes)).toBe(true);
      client.send({ op: "add-query", q: { notes: {} }, "client-event-id": "q2" });
      expect(await client.op("add-query-exists")).toMatchObject({ "client-event-id": "q2" });
      client.send({ op: "add-query", q: { users: {} }, "client-event-id": "q3" });
      const triples = await client.op("add-query-ok");
      expect(triples.result[0].data["datalog-result"]["join-rows"]).toBeArray();
      client.send({ op: "remove-query", q: { notes: {} }, "client-event-id": "r1" });
      expect(await client.op("remove-query-ok")).toMatchObject({ q: { notes: {} } });
      await addNote(alice, "after remove");
      client.send({ op: "add-query", q: { notes: { $: { limit: 1 } } }, "client-event-id": "sync" });
      await client.op("add-query-ok");
      expect(client.pending().filter((m) => m.op === "refresh-ok")).toEqual([]);
    });

    test("one refresh per relevant write, as the subscriber sees it; none for an unrelated write", async () => {
      const watcher = await connect(alice);
      watcher.send({
        op: "add-query",
        q: { notes: { $: { where: { title: { $like: "live%" } } } } },
        "return-type": "tree",
      });
      await watcher.op("add-query-ok");
      const other = await connect(bob);
      other.send({ op: "add-query", q: { notes: {} }, "return-type": "tree" });
      const bobsBefore = (await other.op("add-query-ok")).result.notes.length;

      const id = await addNote(alice, "live one");
      const refresh = await watcher.op("refresh-ok");
      expect(refresh.computations).toHaveLength(1);
      expect(refresh.computations[0]["instaql-result"].notes.map((n: { id: string }) => n.id)).toEqual([id]);

      // Bob's query reads notes, but what he may see did not change: nothing is pushed to him.
      await (await t.invoke("data.add-user", { email: `u${crypto.randomUUID()}@x`, name: "unrelated" })).json();
      await addNote(bob, "bob's own");
      const bobs = await other.op("refresh-ok");
      expect(bobs.computations[0]["instaql-result"].notes).toHaveLength(bobsBefore + 1);
      // A write to another entity, and alice's own unrelated note, sent nothing more to the watcher.
      await addNote(alice, "not matching");
      watcher.send({ op: "add-query", q: { users: { $: { limit: 1 } } }, "client-event-id": "fence" });
      await watcher.next((m) => m["client-event-id"] === "fence");
      expect(watcher.pending().filter((m) => m.op === "refresh-ok")).toEqual([]);
    });

    test("writes, unknown ops and malformed JSON get an error and the socket stays open", async () => {
      const client = await connect(alice);
      client.send({ op: "transact", "tx-steps": [], "client-event-id": "w" });
      expect(await client.op("error")).toMatchObject({
        status: 400,
        "client-event-id": "w",
        "original-event": { op: "transact" },
      });
      client.send({ op: "explode", "client-event-id": "x" });
      expect((await client.op("error")).message).toContain("unknown op");
      client.send("{not json");
      expect((await client.op("error")).status).toBe(400);
      client.send({ op: "add-query", q: { planets: {} }, "client-event-id": "bad" });
      expect((await client.op("error")).message).toContain("unknown entity");
      client.send({ op: "add-query", q: { users: {} }, "client-event-id": "alive" });
      expect((await client.op("add-query-ok"))["client-event-id"]).toBe("alive");
      expect(client.closed).toBeNull();
    });

    test("a socket whose token is revoked is closed", async () => {
      const token = await t.userToken("carol");
      const client = await connect(token);
      await revokeUserToken(t.store, token);
      await client.whenClosed();
      expect(client.closed?.code).toBe(4001);
      // Seen at the socket's next check (every 2 s) once the server stops taking the token it vouched for
      // (TOKEN_RECHECK_MS): up to ~4 s.
    }, 15_000);
  });

  describe(`subscribe-stream (${dialect.name})`, () => {
    let t: TestServer;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic"), env: { WAIT_MS: "100" } });
    });
    afterAll(() => t.stop());

    test("follows one execution's status until it ends; another user's execution is not found", async () => {
      const gate = crypto.randomUUID();
      const res = await t.invoke("test.count", { key: crypto.randomUUID(), gate });
      const { id } = (await res.json()).execution;
      const client = await LiveClient.connect(t.url);
      client.send({ op: "init", "access-token": t.serviceKey });
      await client.op("init-ok");
      client.send({ op: "subscribe-stream", "execution-id": id, "client-event-id": "s" });
      expect(await client.op("stream-append")).toMatchObject({ "execution-id": id, status: "running", done: false });
      openGate(gate);
      expect(await client.op("stream-append")).toMatchObject({ "execution-id": id, status: "succeeded", done: true });

      const stranger = await LiveClient.connect(t.url);
      stranger.send({ op: "init", "access-token": await t.userToken("stranger") });
      await stranger.op("init-ok");
      stranger.send({ op: "subscribe-stream", "execution-id": id });
      expect((await stranger.op("error")).status).toBe(404);
      client.close();
      stranger.close();
    });

    test("streams ctx.log lines as they are written, after those stored before it subscribed", async () => {
      const gate = crypto.randomUUID();
      const { id } = (await (await t.invoke("test.chatty", { gate })).json()).execution;
      const client = await LiveClient.connect(t.url);
      client.send({ op: "init", "access-token": t.serviceKey });
      await client.op("init-ok");
      client.send({ op: "subscribe-stream", "execution-id": id });
      expect(await client.op("stream-append")).toMatchObject({ status: "running" });
      expect(await client.next((m) => m.op === "stream-append" && m.log !== undefined)).toMatchObject({
        log: "before the gate",
      });
      openGate(gate);
      expect(await client.next((m) => m.op === "stream-append" && m.log !== undefined)).toMatchObject({
        "execution-id": id,
        log: 'after the gate {"n":2}',
      });
      expect(await client.next((m) => m.op === "stream-append" && m.done === true)).toMatchObject({
        status: "succeeded",
      });
      client.close();
    });
  });
}

const postgresDialect = dialects.find((d) => d.name === "postgres");

describe.skipIf(!postgresDialect)("live queries across instances (postgres)", () => {
  const startWith = (release: string, env: Record<string, string> = {}) =>
    startTestServer(postgresDialect as (typeof dialects)[number], { release: fixture(release), env });

  test("a write through one server refreshes a subscriber of another on the same database", async () => {
    const a = await startWith("data");
    const b = await startPeer(a);
    const client = await LiveClient.connect(b.url);
    try {
      client.send({ op: "init", "access-token": a.serviceKey });
      await client.op("init-ok");
      client.send({ op: "add-query", q: { notes: {} }, "return-type": "tree" });
      expect((await client.op("add-query-ok")).result.notes).toEqual([]);
      const body = await (await a.invoke("data.add-note", { title: "from A", priority: 1 })).json();
      const refresh = await client.op("refresh-ok");
      expect(refresh.computations[0]["instaql-result"].notes.map((n: { id: string }) => n.id)).toEqual([
        body.execution.output.id,
      ]);
    } finally {
      client.close();
      await b.stop();
      await a.stop();
    }
  });

  /** `executor` runs a gated test.count; `follower` follows it with subscribe-stream and /result. */
  async function followAcross(executor: { url: string; serviceKey: string }, follower: { url: string }) {
    const client = await LiveClient.connect(follower.url);
    const headers = { authorization: `Bearer ${executor.serviceKey}`, "content-type": "application/json" };
    try {
      const gate = crypto.randomUUID();
      const response = await fetch(`${executor.url}/actions/test.count/invoke`, {
        method: "POST",
        headers,
        body: JSON.stringify({ requestId: crypto.randomUUID(), input: { key: crypto.randomUUID(), gate } }),
      });
      expect(response.status).toBe(202);
      const { id } = ((await response.json()) as { execution: { id: string } }).execution;
      client.send({ op: "init", "access-token": executor.serviceKey });
      await client.op("init-ok");
      client.send({ op: "subscribe-stream", "execution-id": id });
      expect(await client.op("stream-append")).toMatchObject({ "execution-id": id, status: "running", done: false });
      const result = fetch(`${follower.url}/executions/${id}/result`, { headers });
      openGate(gate);
      expect(await client.op("stream-append")).toMatchObject({ "execution-id": id, status: "succeeded", done: true });
      const answered = await result;
      expect(answered.status).toBe(200);
      expect(await answered.json()).toMatchObject({ id, status: "succeeded" });
    } finally {
      client.close();
    }
  }

  test("subscribe-stream and /result on one server follow an execution running on another", async () => {
    const a = await startWith("basic", { WAIT_MS: "100" });
    const b = await startPeer(a, { WAIT_MS: "100" });
    try {
      await followAcross({ url: b.url, serviceKey: a.serviceKey }, a);
    } finally {
      await b.stop();
      await a.stop();
    }
  });

  test("subscribe-stream on one server streams the log lines of an execution running on another", async () => {
    const a = await startWith("basic", { WAIT_MS: "100" });
    const b = await startPeer(a, { WAIT_MS: "100" }, { minMs: 25, maxMs: 100 });
    const client = await LiveClient.connect(b.url);
    const logged = () => client.next((m) => m.op === "stream-append" && m.log !== undefined);
    try {
      const gate = crypto.randomUUID();
      const { id } = (await (await a.invoke("test.logs", { lines: 2, gate })).json()).execution;
      client.send({ op: "init", "access-token": a.serviceKey });
      await client.op("init-ok");
      client.send({ op: "subscribe-stream", "execution-id": id });
      expect(await client.op("stream-append")).toMatchObject({ status: "running" });
      expect(await logged()).toMatchObject({ "execution-id": id, log: "line 0" });
      expect(await logged()).toMatchObject({ log: "line 1" });
      openGate(gate);
      // Logged on A in the turn it returned: stored with its end, and streamed before it.
      const streamed = () => client.next((m) => m.op === "stream-append");
      expect(await streamed()).toMatchObject({ log: "after the gate" });
      expect(await streamed()).toMatchObject({ status: "succeeded", done: true });
    } finally {
      client.close();
      await b.stop();
      await a.stop();
    }
  }, 30_000);

  test("a follower hears an end on another server at once (NOTIFY), not at its next poll", async () => {
    const executor = await startWith("basic", { WAIT_MS: "100" });
    // The follower would read the row again only after a minute: only the notification can tell it in time.
    const minute = { minMs: 60_000, maxMs: 60_000 };
    const follower = await startPeer(executor, { WAIT_MS: "20000" }, minute);
    try {
      await followAcross(executor, follower);
    } finally {
      await follower.stop();
      await executor.stop();
    }
  }, 30_000);
});

describe("sockets that never sign in", () => {
  test("a socket without a valid init within 10 s is closed with 4008; one that signed in stays", async () => {
    const t = await startTestServer(dialects[0] as (typeof dialects)[number], { release: fixture("basic") });
    const silent = await LiveClient.connect(t.url);
    const refused = await LiveClient.connect(t.url);
    const signedIn = await LiveClient.connect(t.url);
    try {
      refused.send({ op: "init", "access-token": "not-a-token" });
      expect((await refused.op("error")).status).toBe(401);
      signedIn.send({ op: "init", "access-token": t.serviceKey });
      await signedIn.op("init-ok");
      await Promise.all([silent.whenClosed(), refused.whenClosed()]);
      expect(silent.closed?.code).toBe(4008);
      expect(refused.closed?.code).toBe(4008);
      // The signed-in socket outlived the deadline and still answers (a fresh init of the same caller).
      signedIn.send({ op: "init", "access-token": t.serviceKey, "client-event-id": "again" });
      expect(await signedIn.op("init-ok")).toMatchObject({ "client-event-id": "again" });
      expect(signedIn.closed).toBeNull();
    } finally {
      silent.close();
      refused.close();
      signedIn.close();
      await t.stop();
    }
  }, 30_000);
});
