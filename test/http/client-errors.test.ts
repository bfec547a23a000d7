import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { revokeUserToken } from "../../src/auth/tokens.ts";
import { ActuateError, type ConnectionState, createClient } from "../../src/client/index.ts";
import { dialects } from "../support/databases.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";

const [sqlite] = dialects;
const dialect = sqlite as (typeof dialects)[number];

type Data = {
  actions: { "data.add-note": { input: { title: string; priority: number }; output: { id: string } } };
  entities: { notes: { title: string } };
};

/** The browser's own WebSocket, counting the sockets a client opens. */
const countingWebSocket = () => {
  const counted = {
    opened: 0,
    WebSocket: class extends WebSocket {
      constructor(url: string | URL) {
        super(url);
        counted.opened++;
      }
    },
  };
  return counted;
};

describe("errors that reach the app", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { release: fixture("data") });
  });
  afterAll(() => t?.stop());

  test("a refused subscription calls its onError with the server's code and ends; the others go on", async () => {
    const client = createClient<Data>({ url: t.url, token: await t.userToken("rae") });
    const errors: ActuateError[] = [];
    const results: unknown[] = [];
    const notes: number[] = [];
    try {
      client.subscribe({ notes: {} }, (result) => notes.push(result.notes.length));
      client.subscribe(
        // @ts-expect-error an entity the release does not have: the types refuse it, and so does the server
        { planets: {} },
        (result) => results.push(result),
        (error) => errors.push(error),
      );
      await eventually(() => errors.length === 1 && notes.length === 1);
      const [refused] = errors;
      expect(refused).toBeInstanceOf(ActuateError);
      expect(refused).toMatchObject({ code: "data_provider_rejected", status: 400 });
      expect(refused?.message).toContain("unknown entity");
      expect(results).toEqual([]);
      // Dropped: subscribing again asks the server again (and is refused again).
      client.subscribe(
        // @ts-expect-error an entity the release does not have: the types refuse it, and so does the server
        { planets: {} },
        () => {},
        (error) => errors.push(error),
      );
      await eventually(() => errors.length === 2);
      await client.invoke("data.add-note", { title: "still live", priority: 1 });
      await eventually(() => notes.at(-1) === 1);
    } finally {
      client.close();
    }
  });

  test("a refused token, then a revoked one, makes the state unauthorized until the token callback answers a new one", async () => {
    let token = "not-a-token";
    let asked = 0;
    const sockets = countingWebSocket();
    const client = createClient<Data>({
      url: t.url,
      token: () => {
        asked++;
        return token;
      },
      WebSocket: sockets.WebSocket,
    });
    const states: ConnectionState[] = [];
    const errors: ActuateError[] = [];
    const titles: string[][] = [];
    client.onConnectionChange((state) => states.push(state));
    client.subscribe(
      { notes: {} },
      (result) => titles.push(result.notes.map((n) => n.title)),
      (error) => errors.push(error),
    );
    try {
      // The init is refused (401): unauthorized, and the subscription hears it.
      await eventually(() => states.at(-1) === "unauthorized");
      expect(errors.at(-1)).toMatchObject({ code: "unauthorized", status: 401 });
      const firstToken = await t.userToken("uma");
      token = firstToken;
      await eventually(() => states.at(-1) === "open", 10_000);
      await eventually(() => JSON.stringify(titles.at(-1)) === "[]");
      expect(sockets.opened).toBe(2);

      // Revoked while open: the server closes the socket (4001); no reconnect follows with the same token.
      await revokeUserToken(t.store, firstToken);
      await eventually(() => states.at(-1) === "unauthorized", 15_000);
      expect(errors).toHaveLength(2);
      expect(errors.at(-1)).toMatchObject({ code: "unauthorized", status: 401 });
      const askedWhenRevoked = asked;
      await eventually(() => asked >= askedWhenRevoked + 2, 10_000);
      expect(sockets.opened).toBe(2);
      expect(states.at(-1)).toBe("unauthorized");

      // A new token: connected again, the same listener gets results again.
      const secondToken = await t.userToken("uma");
      await t.invoke("data.add-note", { title: "while away", priority: 1 }, { token: secondToken });
      token = secondToken;
      await eventually(() => states.at(-1) === "open", 15_000);
      await eventually(() => JSON.stringify(titles.at(-1)) === '["while away"]');
      expect(sockets.opened).toBe(3);
    } finally {
      client.close();
    }
  }, 60_000);

  test("an execution followed ends with unauthorized when the token is revoked", async () => {
    const token = await t.userToken("vic");
    const client = createClient<Data>({ url: t.url, token: () => token });
    const states: ConnectionState[] = [];
    client.onConnectionChange((state) => states.push(state));
    try {
      const { execution } = await client.invoke("data.add-note", { title: "x", priority: 1 });
      client.subscribe({ notes: {} }, () => {});
      await eventually(() => states.at(-1) === "open");
      await revokeUserToken(t.store, token);
      await eventually(() => states.at(-1) === "unauthorized", 15_000);
      // Following once unauthorized ends at once with the refusal.
      const events = [];
      for await (const event of client.executions.follow(execution.id)) events.push(event);
      expect(events).toEqual([{ done: true, errorCode: "unauthorized" }]);
    } finally {
      client.close();
    }
  }, 30_000);
});

describe("a retry budget that rides out a restart", () => {
  let t: TestServer;
  let proxy: ReturnType<typeof tcpProxy>;
  beforeAll(async () => {
    t = await startTestServer(dialect, { release: fixture("data") });
    // One address across the restart (the new server listens on another port).
    proxy = tcpProxy(() => Number(new URL(t.url).port));
  });
  afterAll(async () => {
    proxy?.stop();
    await t?.stop();
  });

  test("calls made while the server is stopped answer once it is started again", async () => {
    let attempts = 0;
    const client = createClient<Data>({
      url: proxy.url,
      token: () => {
        attempts++;
        return t.serviceKey;
      },
    });
    const requestId = crypto.randomUUID();
    let invoked: Promise<unknown> = Promise.resolve();
    let listed: Promise<unknown> = Promise.resolve();
    // Between the restart's stop and its start: the server is away, and the calls made now retry.
    const stopServer = t.server.stop;
    t.server.stop = async () => {
      await stopServer();
      invoked = client.invoke("data.add-note", { title: "through a restart", priority: 1 }, { requestId });
      listed = client.executions.list({ action: "data.add-note" });
      // Each attempt asks for the token: both calls go on past the 5 attempts each that once was all.
      await eventually(() => attempts >= 12, 30_000);
    };
    await t.restart();
    expect(await invoked).toMatchObject({ execution: { requestId, status: "succeeded" } });
    expect(await listed).toHaveProperty("items");
  }, 60_000);

  test("an abort ends a retrying call at once with the signal's reason; a spent budget gives up as network_error", async () => {
    const away = tcpProxy(() => 1); // connects to a port nobody listens on: every attempt fails
    try {
      let attempts = 0;
      const client = createClient<Data>({
        url: away.url,
        token: () => {
          attempts++;
          return t.serviceKey;
        },
      });
      const stop = new AbortController();
      const reading = client.query({ notes: {} }, { signal: stop.signal }).catch((e) => e);
      await eventually(() => attempts >= 2);
      stop.abort(new Error("the page was closed"));
      expect(((await reading) as Error).message).toBe("the page was closed");

      const brief = createClient<Data>({ url: away.url, token: t.serviceKey, retryBudgetMs: 1_000 });
      const failed = await brief.executions.list().catch((e) => e);
      expect(failed).toBeInstanceOf(ActuateError);
      expect(failed).toMatchObject({ code: "network_error", status: 0 });
    } finally {
      away.stop();
    }
  }, 30_000);
});

describe("files.download and files.stream", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { release: fixture("data") });
  });
  afterAll(() => t?.stop());

  test("an uploaded file comes back as a Blob of its bytes and type, or as a stream; a missing one is file_not_found", async () => {
    const client = createClient({ url: t.url, token: await t.userToken("dora") });
    const bytes = new Uint8Array(200_000).map((_, i) => (i * 7) % 256);
    await client.files.upload("down/blob.bin", new Blob([bytes], { type: "application/x-test" }));

    const blob = await client.files.download("down/blob.bin");
    expect(blob.type).toBe("application/x-test");
    expect(new Uint8Array(await blob.arrayBuffer())).toEqual(bytes);

    const stream = await client.files.stream("down/blob.bin", { signal: new AbortController().signal });
    expect(new Uint8Array(await new Response(stream).arrayBuffer())).toEqual(bytes);

    const missing = await client.files.download("down/nothing.bin").catch((e) => e);
    expect(missing).toBeInstanceOf(ActuateError);
    expect(missing).toMatchObject({ code: "file_not_found", status: 404 });
    // Someone else's file is missing to them too.
    const other = createClient({ url: t.url, token: await t.userToken("eve") });
    await expect(other.files.stream("down/blob.bin")).rejects.toMatchObject({ code: "file_not_found" });
  });
});
