import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bundlesDir, startServer } from "../../src/main.ts";
import { publishRelease } from "../../src/release/publish.ts";
import { openStore } from "../../src/store/open.ts";
import { dialects } from "../support/databases.ts";
import { freePort, type HostingServer, startHostingServer } from "../support/hosting.ts";
import { LiveClient } from "../support/live-client.ts";
import { mcpClient } from "../support/mcp-client.ts";
import { row } from "../support/rows.ts";
import { eventually, fixture, type TestServer } from "../support/server.ts";

// Issue #41 §4: the contract driven in two environments of two organizations with the same release,
// colliding request ids, user ids, file paths and entity ids. Every check fails on a leak: an answer
// of one environment that names, shows or changes what the other wrote.

const RELEASE = fixture("environments");

type Item = { id: string; label: string };

for (const dialect of dialects) {
  describe(`the contract in two environments (${dialect.name})`, () => {
    let h: HostingServer;
    const alice: Record<"a" | "b", string> = { a: "", b: "" };

    beforeAll(async () => {
      h = await startHostingServer(dialect, {
        environments: [
          { handle: "a", organization: "acme", release: RELEASE },
          { handle: "b", organization: "beta", release: RELEASE },
        ],
      });
      alice.a = await h.userToken("a", "alice");
      alice.b = await h.userToken("b", "alice");
    });
    afterAll(() => h?.stop());

    const json = async (handle: string, path: string, init: RequestInit & { token?: string | null } = {}) => {
      const res = await h.fetch(handle, path, init);
      return { status: res.status, body: await res.json() };
    };
    const query = async (handle: string, q: unknown) =>
      json(handle, "/query?format=objects", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: q }),
      });
    const items = async (handle: string): Promise<Item[]> => {
      const { status, body } = await query(handle, { items: {} });
      expect(status).toBe(200);
      return body.items;
    };
    const put = async (handle: string, input: { label: string; id?: string }) =>
      (await (await h.invoke(handle, "env.put", input)).json()).execution;

    test("the same requestId by the same user id is two executions, each answering its own", async () => {
      const requestId = crypto.randomUUID();
      const answers = await Promise.all(
        (["a", "b"] as const).map(async (handle) => {
          const res = await h.invoke(handle, "env.whoami", { note: handle }, { requestId, token: alice[handle] });
          expect(res.status).toBe(200);
          return res.json();
        }),
      );
      const [inA, inB] = answers.map((a) => a.execution);
      expect(inA.id).not.toBe(inB.id);
      expect(answers.map((a) => a.statusUrl)).toEqual([
        `${h.at("a")}/executions/${inA.id}`,
        `${h.at("b")}/executions/${inB.id}`,
      ]);
      expect(inA.output).toEqual({ id: "alice", executionId: inA.id, requestId, note: "a" });
      expect(inB.output).toEqual({ id: "alice", executionId: inB.id, requestId, note: "b" });
      // A replay in each answers its own execution, not the other's.
      for (const [handle, own] of [
        ["a", inA],
        ["b", inB],
      ] as const) {
        const replay = await (
          await h.invoke(handle, "env.whoami", { note: handle }, { requestId, token: alice[handle] })
        ).json();
        expect(replay.execution.id).toBe(own.id);
        const byRequest = await json(handle, `/executions/requests/${requestId}`, { token: alice[handle] });
        expect(byRequest.body.id ?? byRequest.body.execution?.id).toBe(own.id);
      }
      // By id: each environment's id is not found in the other, for every read.
      for (const [handle, other] of [
        ["a", inB],
        ["b", inA],
      ] as const) {
        for (const path of [
          `/executions/${other.id}`,
          `/executions/${other.id}/result`,
          `/executions/${other.id}/logs`,
        ]) {
          const answer = await json(handle, path);
          expect([path, answer.status, answer.body.error]).toEqual([path, 404, "execution_not_found"]);
        }
      }
      // Lists: alice's executions in each hold only that environment's.
      const listed = async (handle: "a" | "b") =>
        ((await json(handle, "/executions?limit=200", { token: alice[handle] })).body.items as { id: string }[]).map(
          (e) => e.id,
        );
      const [listA, listB] = [await listed("a"), await listed("b")];
      expect(listA).toContain(inA.id);
      expect(listA).not.toContain(inB.id);
      expect(listB).toContain(inB.id);
      expect(listB).not.toContain(inA.id);
      // An administrator's list (every caller's) is the environment's too.
      const everyone = async (handle: string) =>
        ((await json(handle, "/executions?limit=200")).body.items as { id: string }[]).map((e) => e.id);
      expect(await everyone("a")).not.toContain(inB.id);
      expect(await everyone("b")).not.toContain(inA.id);
      // Log lines: each execution's own, read in its own environment.
      const logs = await json("a", `/executions/${inA.id}/logs`);
      expect(logs.body.items.map((l: { line: string }) => l.line)).toEqual(["note a"]);
    });

    test("the same file path is two files; a URL signed in one environment is refused on the other's host", async () => {
      const path = "shared/report.txt";
      for (const handle of ["a", "b"]) {
        const res = await h.fetch(handle, "/storage/upload", {
          method: "PUT",
          headers: { path, "content-type": "text/plain" },
          body: `${handle}'s bytes`,
          token: alice[handle as "a" | "b"],
        });
        expect(res.status).toBeLessThan(300);
      }
      const signed = async (handle: "a" | "b") =>
        (
          await json(handle, `/storage/signed-download-url?filename=${encodeURIComponent(path)}`, {
            token: alice[handle],
          })
        ).body.url as string;
      const [urlA, urlB] = [await signed("a"), await signed("b")];
      expect(urlA).toStartWith(`${h.at("a")}/storage/signed/`);
      expect(await (await fetch(urlA)).text()).toBe("a's bytes");
      expect(await (await fetch(urlB)).text()).toBe("b's bytes");
      // A's signed URL presented to B's host: refused, B's bytes not given.
      const crossed = await fetch(urlA.replace(h.at("a"), h.at("b")));
      expect([403, 404]).toContain(crossed.status);
      expect(await crossed.json()).toMatchObject({ ok: false });
      // A signed upload of A's used on B's host: refused, B's file unchanged.
      const upload = await json("a", "/storage/signed-upload-url", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ path, contentType: "text/plain" }),
        token: alice.a,
      });
      expect(upload.status).toBe(200);
      const stolen = await fetch((upload.body.url as string).replace(h.at("a"), h.at("b")), {
        method: "PUT",
        headers: { "content-type": "text/plain" },
        body: "stolen",
      });
      expect([403, 404]).toContain(stolen.status);
      expect(await (await fetch(await signed("b"))).text()).toBe("b's bytes");
      // The file lists (the console's) are each environment's own.
      const listed = async (handle: "a" | "b") =>
        ((await json(handle, "/storage/files?prefix=shared/")).body.items as { path: string; size: number }[]).map(
          (f) => [f.path, f.size],
        );
      expect(await listed("a")).toEqual([[path, "a's bytes".length]]);
      expect(await listed("b")).toEqual([[path, "b's bytes".length]]);
      // Deleting the path in B leaves A's file.
      const deleted = await h.fetch("b", `/storage/files?filename=${encodeURIComponent(path)}`, {
        method: "DELETE",
        token: alice.b,
      });
      expect(deleted.status).toBeLessThan(300);
      expect(await (await fetch(await signed("a"))).text()).toBe("a's bytes");
      expect(await listed("b")).toEqual([]);
      expect(
        (await json("b", `/storage/signed-download-url?filename=${encodeURIComponent(path)}`, { token: alice.b }))
          .status,
      ).toBe(404);
    });

    test("entities: an id of one environment is unknown to the other; the same id in both reads each its own", async () => {
      const madeInA = await put("a", { label: "a's item" });
      expect(madeInA.status).toBe("succeeded");
      const id = madeInA.output.id as string;
      expect((await items("b")).map((i) => i.id)).not.toContain(id);
      // Relabelling A's id from B: not found there, A's item unchanged.
      const fromB = await put("b", { label: "b was here", id });
      expect(fromB.status).toBe("failed");
      expect((await items("a")).find((i) => i.id === id)?.label).toBe("a's item");

      // The same id written in B (a settlement's insert, as an execution of B writes it).
      const b = h.store.environment(await h.id("b"));
      const seed = row({ requestId: crypto.randomUUID(), action: "env.put", createdAt: Date.now() });
      await b.executions.claim(seed);
      await b.executions.settle(seed.id, {
        status: "succeeded",
        output: { id },
        errorCode: null,
        errorMessage: null,
        finishedAt: Date.now(),
        writes: [{ op: "insert", entity: "items", id, doc: { label: "b's item", ownerId: "alice" }, at: Date.now() }],
      });
      expect((await items("a")).filter((i) => i.id === id).map((i) => i.label)).toEqual(["a's item"]);
      expect((await items("b")).filter((i) => i.id === id).map((i) => i.label)).toEqual(["b's item"]);
      // Each relabels its own only.
      expect((await put("b", { label: "b's, relabelled", id })).status).toBe("succeeded");
      expect((await items("a")).find((i) => i.id === id)?.label).toBe("a's item");
      expect((await items("b")).find((i) => i.id === id)?.label).toBe("b's, relabelled");

      // Links: the same item id tagged in each environment; each reads its own tag only.
      for (const handle of ["a", "b"]) {
        expect(
          (await (await h.invoke(handle, "env.tag", { itemId: id, name: `${handle}'s tag` })).json()).execution.status,
        ).toBe("succeeded");
      }
      const tagsOf = async (handle: string) => {
        const { body } = await query(handle, { items: { $: { where: { id } }, tags: {} } });
        return (body.items as { tags: { name: string }[] }[]).flatMap((i) => i.tags.map((t) => t.name));
      };
      expect(await tagsOf("a")).toEqual(["a's tag"]);
      expect(await tagsOf("b")).toEqual(["b's tag"]);
      // Linking an item of A's only from B: not found there.
      const onlyInA = (await put("a", { label: "only in a" })).output.id;
      expect((await (await h.invoke("b", "env.tag", { itemId: onlyInA, name: "b's" })).json()).execution.status).toBe(
        "failed",
      );
    });

    test("workflow runs and their steps are their environment's", async () => {
      const requestId = crypto.randomUUID();
      const started = await Promise.all(
        (["a", "b"] as const).map(async (handle) => {
          const res = await h.invoke(handle, "env.flow", { note: handle }, { requestId, token: alice[handle] });
          expect(res.status).toBe(202);
          return (await res.json()).runId as string;
        }),
      );
      const [runA, runB] = started as [string, string];
      expect(runA).not.toBe(runB);
      for (const [handle, own, other] of [
        ["a", runA, runB],
        ["b", runB, runA],
      ] as const) {
        const ended = await eventually(async () => {
          const { body } = await json(handle, `/runs/${own}`, { token: alice[handle] });
          return body.status === "succeeded" ? body : null;
        });
        expect(ended.output).toEqual({ note: handle });
        expect(ended.steps.map((s: { name: string }) => s.name)).toEqual(["echo"]);
        expect((await json(handle, `/runs/${other}`)).status).toBe(404);
        expect((await json(handle, `/runs/${other}/cancel`, { method: "POST" })).status).toBe(404);
        const listed = (await json(handle, "/runs?limit=200", { token: alice[handle] })).body.items.map(
          (r: { id: string }) => r.id,
        );
        expect(listed).toContain(own);
        expect(listed).not.toContain(other);
      }
    });

    test("delayed invocations are listed, read and cancelled in their environment only", async () => {
      const scheduled = (await (await h.invoke("a", "env.later", { note: "later" }, { token: alice.a })).json())
        .execution.output.id as string;
      const ids = async (handle: "a" | "b") =>
        ((await json(handle, "/scheduled?limit=200")).body.items as { id: string }[]).map((s) => s.id);
      expect(await ids("a")).toContain(scheduled);
      expect(await ids("b")).not.toContain(scheduled);
      expect((await json("b", `/scheduled/${scheduled}`)).status).toBe(404);
      expect((await json("b", `/scheduled/${scheduled}`, { method: "DELETE" })).status).toBe(404);
      expect((await json("a", `/scheduled/${scheduled}`)).status).toBe(200);
    });

    test("a live query in one environment hears its writes only; an execution stream is followed in its own", async () => {
      const client = await LiveClient.connect(h.at("a"));
      const stranger = await LiveClient.connect(h.at("b"));
      try {
        client.send({ op: "init", "access-token": h.serviceKey });
        await client.op("init-ok");
        client.send({ op: "add-query", q: { items: {} }, "return-type": "tree" });
        const before = (await client.op("add-query-ok")).result.items.length as number;
        // B's write first, then A's: the first refresh must be A's, and hold only A's new item.
        const inB = (await put("b", { label: "live in b" })).output.id;
        const inA = (await put("a", { label: "live in a" })).output.id;
        const refresh = await client.op("refresh-ok");
        const ids = refresh.computations[0]["instaql-result"].items.map((i: Item) => i.id);
        expect(ids).toContain(inA);
        expect(ids).not.toContain(inB);
        expect(ids).toHaveLength(before + 1);
        client.send({ op: "add-query", q: { items: { $: { limit: 1 } } }, "client-event-id": "fence" });
        await client.next((m) => m["client-event-id"] === "fence");
        expect(client.pending().filter((m) => m.op === "refresh-ok")).toEqual([]);

        // A's execution: followed on A's host, not found on B's (whose service key is the same operator key).
        const { execution } = await (await h.invoke("a", "env.whoami", { note: "stream" })).json();
        client.send({ op: "subscribe-stream", "execution-id": execution.id });
        expect(await client.op("stream-append")).toMatchObject({ "execution-id": execution.id, status: "succeeded" });
        stranger.send({ op: "init", "access-token": h.serviceKey });
        await stranger.op("init-ok");
        stranger.send({ op: "subscribe-stream", "execution-id": execution.id });
        expect((await stranger.op("error")).status).toBe(404);
      } finally {
        client.close();
        stranger.close();
      }
    });

    // SQLite's changes have no other process to reach; PostgreSQL relays them (LISTEN/NOTIFY) to other instances.
    test.if(dialect.name === "postgres")(
      "a live query on another instance (its own store) hears its environment's writes made here, not the other's",
      async () => {
        const store = await openStore(h.config.databaseUrl);
        const port = freePort();
        const second = await startServer({ ...h.config, port }, { store, log: () => {} });
        const client = await LiveClient.connect(h.at("a").replace(`:${h.port}`, `:${port}`));
        try {
          client.send({ op: "init", "access-token": h.serviceKey });
          await client.op("init-ok");
          client.send({ op: "add-query", q: { items: {} }, "return-type": "tree" });
          await client.op("add-query-ok");
          const inB = (await put("b", { label: "relayed in b" })).output.id;
          const inA = (await put("a", { label: "relayed in a" })).output.id;
          const refresh = await client.op("refresh-ok", 10_000);
          const ids = refresh.computations[0]["instaql-result"].items.map((i: Item) => i.id);
          expect(ids).toContain(inA);
          expect(ids).not.toContain(inB);
          client.send({ op: "add-query", q: { items: { $: { limit: 1 } } }, "client-event-id": "fence" });
          await client.next((m) => m["client-event-id"] === "fence");
          expect(client.pending().filter((m) => m.op === "refresh-ok")).toEqual([]);
        } finally {
          client.close();
          await second.stop();
          await store.close();
        }
      },
    );

    test("metadata names the environment's own URL and handle", async () => {
      for (const handle of ["a", "b"]) {
        const resource = await json(handle, "/.well-known/oauth-protected-resource", { token: null });
        expect(resource.status).toBe(200);
        expect(resource.body.resource).toStartWith(h.at(handle));
        const openapi = await json(handle, "/openapi.json");
        expect(openapi.body.servers).toEqual([{ url: h.at(handle) }]);
      }
    });

    test("/stats counts its environment's executions only", async () => {
      const succeeded = async (handle: string) => (await json(handle, "/stats")).body.executions.succeeded as number;
      const [a0, b0] = [await succeeded("a"), await succeeded("b")];
      for (let i = 0; i < 3; i++) await h.invoke("a", "env.whoami", { note: `stats ${i}` });
      expect(await succeeded("a")).toBe(a0 + 3);
      expect(await succeeded("b")).toBe(b0);
    });

    test("/mcp: each environment's tools; a tool call runs in the environment it was sent to", async () => {
      const clients = await Promise.all(
        (["a", "b"] as const).map((handle) => mcpClient({ url: h.at(handle) } as TestServer, h.serviceKey)),
      );
      const [inA, inB] = clients as [(typeof clients)[number], (typeof clients)[number]];
      try {
        const names = async (client: typeof inA) => (await client.listTools()).tools.map((t) => t.name).sort();
        expect(await names(inA)).toContain("env.whoami");
        expect(await names(inB)).toEqual(await names(inA));
        const called = await inB.callTool({ name: "env.whoami", arguments: { note: "mcp" } });
        const output = called.structuredContent as { executionId: string; note: string };
        expect(output.note).toBe("mcp");
        expect((await json("b", `/executions/${output.executionId}`)).status).toBe(200);
        expect((await json("a", `/executions/${output.executionId}`)).status).toBe(404);
        // Each names its own schema resource, and reads it.
        for (const [client, handle, other] of [
          [inA, "a", "b"],
          [inB, "b", "a"],
        ] as const) {
          const uris = (await client.listResources()).resources.map((r) => r.uri);
          expect(uris).toContain(`service://${handle}/schema`);
          expect(uris.join(" ")).not.toContain(`service://${other}/`);
          const schema = await client.readResource({ uri: `service://${handle}/schema` });
          expect(schema.contents.length).toBeGreaterThan(0);
          await expect(client.readResource({ uri: `service://${other}/schema` })).rejects.toThrow();
        }
      } finally {
        await Promise.all(clients.map((c) => c.close()));
      }
    });

    test("releases: a version published into one environment is not the other's, nor are its actions and tools", async () => {
      // Another release (no `items`: B's rows of it are left behind, as --force does).
      await publishRelease({
        store: h.store.environment(await h.id("b")),
        bundlesDir: bundlesDir(h.config),
        dir: fixture("basic"),
        version: "e2",
        whenTaken: "refuse",
        force: true,
      });
      const versions = async (handle: string) =>
        ((await json(handle, "/releases")).body.items as { version: string }[]).map((r) => r.version);
      expect(await versions("b")).toEqual(["e2", "e1"]);
      expect(await versions("a")).toEqual(["e1"]);
      expect((await json("a", "/releases/e2")).status).toBe(404);
      expect((await json("a", "/releases/e2/activate", { method: "POST" })).status).toBe(404);
      const actions = async (handle: string) =>
        ((await json(handle, "/actions")).body.items as { name: string }[]).map((a) => a.name);
      // B serves its new release (polled every 50 ms here); A still serves e1.
      await eventually(async () => (await actions("b")).includes("test.echo"));
      expect(await actions("b")).not.toContain("env.whoami");
      expect(await actions("a")).toContain("env.whoami");
      expect(await actions("a")).not.toContain("test.echo");
      expect((await h.invoke("a", "test.echo", { text: "x" })).status).toBe(404);
      // Schedules are the active release's: B's new one has none, A's still has its own.
      const schedules = async (handle: string) =>
        ((await json(handle, "/schedules")).body.items as { name: string }[]).map((s) => s.name);
      expect(await schedules("a")).toEqual(["hourly"]);
      expect(await schedules("b")).toEqual([]);
      const client = await mcpClient({ url: h.at("a") } as TestServer, h.serviceKey);
      try {
        const tools = (await client.listTools()).tools.map((t) => t.name);
        expect(tools).toContain("env.whoami");
        expect(tools).not.toContain("test.echo");
      } finally {
        await client.close();
      }
    });
  });
}
