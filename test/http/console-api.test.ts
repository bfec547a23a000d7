import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dialects } from "../support/databases.ts";
import { answerSchemas } from "../support/openapi-schemas.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

/** The millisecond a UUIDv7 id was made at (what since/until compare). */
const idTime = (id: string) => Number.parseInt(id.replaceAll("-", "").slice(0, 12), 16);
const iso = (ms: number) => new Date(ms).toISOString();

/** An error answer as the tests read it. */
interface ErrorBody {
  ok: false;
  error: string;
  message: string;
  details: { issues: { where: string }[] };
}

// The endpoints issue #19 adds to the public API for the console (and everyone): docs/API.md.
for (const dialect of dialects) {
  describe(`console API (${dialect.name})`, () => {
    let t: TestServer;
    let alice: string;
    let bob: string;
    let matches: Awaited<ReturnType<typeof answerSchemas>>;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic") });
      alice = await t.userToken("alice");
      bob = await t.userToken("bob");
      matches = await answerSchemas(t);
    });
    afterAll(() => t.stop());

    const expectError = async (res: Response, status: number, error: string) => {
      expect(res.status).toBe(status);
      const body = (await res.json()) as ErrorBody;
      expect(body).toMatchObject({ ok: false, error });
      matches(body, "Error");
      return body;
    };

    test("GET /releases and POST /releases/{version}/activate: service keys only; the history newest first, paged; rolling back switches this server at once", async () => {
      await expectError(await t.fetch("/releases", { token: null }), 401, "unauthorized");
      await expectError(await t.fetch("/releases/t1/activate", { method: "POST", token: null }), 401, "unauthorized");
      await expectError(await t.fetch("/releases", { token: alice }), 403, "access_denied");
      await expectError(await t.fetch("/releases/t1/activate", { method: "POST", token: alice }), 403, "access_denied");
      // A user learns nothing of which versions exist.
      await expectError(
        await t.fetch("/releases/nope/activate", { method: "POST", token: alice }),
        403,
        "access_denied",
      );

      await t.publish(fixture("basic-v2"));
      await eventually(() => t.server.releases.current()?.version === "t2");
      const history = await (await t.fetch("/releases")).json();
      matches(history, "ReleasePage");
      expect(history.items.map((r: { version: string; active: boolean }) => [r.version, r.active])).toEqual([
        ["t2", true],
        ["t1", false],
      ]);
      expect(history.items[0].activatedAt).not.toBeNull();
      expect(history.items[1]).toMatchObject({
        activatedAt: null,
        bundleHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      expect(Date.parse(history.items[1].publishedAt)).toBeLessThanOrEqual(Date.parse(history.items[0].publishedAt));
      expect(history.nextCursor).toBeNull();

      const first = await (await t.fetch("/releases?limit=1")).json();
      expect(first.items.map((r: { version: string }) => r.version)).toEqual(["t2"]);
      const second = await (await t.fetch(`/releases?limit=1&cursor=${first.nextCursor}`)).json();
      expect(second).toMatchObject({ items: [{ version: "t1" }], nextCursor: null });
      await expectError(await t.fetch("/releases?cursor=bm90LWEtY3Vyc29y"), 400, "invalid_request");
      await expectError(await t.fetch("/releases?limit=0"), 400, "invalid_request");

      await expectError(await t.fetch("/releases/t9/activate", { method: "POST" }), 404, "release_not_found");
      await expectError(await t.fetch("/releases/..%2Fx/activate", { method: "POST" }), 404, "release_not_found");

      const rolledBack = await t.fetch("/releases/t1/activate", { method: "POST" });
      expect(rolledBack.status).toBe(200);
      expect(await rolledBack.json()).toMatchObject({ version: "t1", previous: "t2" });
      // Activation loaded it here before answering; other servers follow on their next poll.
      expect(t.server.releases.current()?.version).toBe("t1");
      expect((await t.store.releases.active()).version).toBe("t1");
      const after = await (await t.fetch("/releases")).json();
      expect(after.items.find((r: { active: boolean }) => r.active).version).toBe("t1");
      expect((await t.invoke("test.echo", { text: "back on t1" })).status).toBe(200);
    });

    test("GET /releases/{version}: service keys only; one release with every action's contract as published", async () => {
      await expectError(await t.fetch("/releases/t1", { token: null }), 401, "unauthorized");
      await expectError(await t.fetch("/releases/t1", { token: alice }), 403, "access_denied");
      // A user learns nothing of which versions exist.
      await expectError(await t.fetch("/releases/nope", { token: alice }), 403, "access_denied");
      await expectError(await t.fetch("/releases/t9"), 404, "release_not_found");
      await expectError(await t.fetch("/releases/..%2Fx"), 404, "release_not_found");

      const t1 = await t.fetch("/releases/t1");
      expect(t1.status).toBe(200);
      const body = await t1.json();
      matches(body, "ReleaseContracts");
      expect(body).toMatchObject({ version: "t1", description: "test fixture", bundleHash: expect.any(String) });
      const echo = body.actions.find((a: { name: string }) => a.name === "test.echo");
      // The same contract the active release answers for the action.
      expect(echo).toEqual(await (await t.fetch("/actions/test.echo/contract")).json());
      const t2 = await (await t.fetch("/releases/t2")).json();
      expect(t2.actions.map((a: { name: string }) => a.name).sort()).toEqual(["test.added", "test.version"]);
      expect(t2.active).not.toBe(body.active);
    });

    test("GET /storage/files: a user lists its own files by prefix, a page at a time; a service key lists everyone's; prefixes cannot escape", async () => {
      const upload = (path: string, token: string) =>
        t.fetch("/storage/upload", {
          method: "PUT",
          headers: { path, "content-type": "text/plain" },
          body: path,
          token,
        });
      for (const path of ["docs/b.txt", "docs/a.txt", "notes/c.txt"])
        expect((await upload(path, alice)).status).toBe(200);
      const bobs = await upload("docs/bob.txt", bob);
      expect(bobs.status).toBe(200);
      matches(await bobs.json(), "File");
      const paths = async (query: string, token?: string) => {
        const res = await t.fetch(`/storage/files${query}`, { token });
        expect(res.status).toBe(200);
        const page = await res.json();
        matches(page, "FilePage");
        return page;
      };

      await expectError(await t.fetch("/storage/files", { token: null }), 401, "unauthorized");
      const mine = await paths("", alice);
      expect(mine.items.map((f: { path: string }) => f.path)).toEqual(["docs/a.txt", "docs/b.txt", "notes/c.txt"]);
      expect(mine.items[0]).toMatchObject({
        size: 10,
        contentType: "text/plain",
        owner: { kind: "user", id: "alice" },
      });
      expect((await paths("?prefix=docs/", bob)).items.map((f: { path: string }) => f.path)).toEqual(["docs/bob.txt"]);
      expect((await paths("?prefix=docs/", alice)).items.map((f: { path: string }) => f.path)).toEqual([
        "docs/a.txt",
        "docs/b.txt",
      ]);
      expect((await paths("?prefix=docs/b", t.serviceKey)).items.map((f: { path: string }) => f.path)).toEqual([
        "docs/b.txt",
        "docs/bob.txt",
      ]);

      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { items: { path: string }[]; nextCursor: string | null } = await paths(
          `?limit=2${cursor ? `&cursor=${cursor}` : ""}`,
          alice,
        );
        expect(page.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.items.map((f) => f.path));
        cursor = page.nextCursor;
      } while (cursor);
      expect(seen).toEqual(["docs/a.txt", "docs/b.txt", "notes/c.txt"]);

      for (const prefix of ["../", "docs/../", "/etc", "docs//", "a\\b"]) {
        const body = await expectError(
          await t.fetch(`/storage/files?prefix=${encodeURIComponent(prefix)}`, { token: alice }),
          400,
          "invalid_path",
        );
        expect(body.message).toBeString();
      }
      // A cursor carrying a path that escapes is not one the server gave out.
      const escaping = Buffer.from("../secret").toString("base64url");
      await expectError(await t.fetch(`/storage/files?cursor=${escaping}`, { token: alice }), 400, "invalid_request");
      await expectError(await t.fetch("/storage/files?limit=500", { token: alice }), 400, "invalid_request");
    });

    test("GET /executions: since/until bound the creation time; caller=<kind>:<id> is for service keys; bad values are 400", async () => {
      const invoke = async (token: string, text: string) => {
        const res = await t.invoke("test.echo", { text }, { token });
        expect(res.status).toBe(200);
        return (await res.json()).execution.id as string;
      };
      const first = await invoke(alice, "first");
      // The next id must fall in a later millisecond than the first: wait for the clock to pass it.
      await eventually(() => Date.now() > idTime(first));
      const second = await invoke(alice, "second");
      const bobs = await invoke(bob, "bob's");
      const ids = async (query: string, token?: string) => {
        const res = await t.fetch(`/executions${query}`, { token });
        expect(res.status).toBe(200);
        return (await res.json()).items.map((e: { id: string }) => e.id);
      };

      const since = iso(idTime(second));
      expect(await ids(`?since=${since}`, alice)).toEqual([second]);
      expect(await ids(`?since=${iso(idTime(first))}&until=${since}`, alice)).toEqual([first]);
      expect(await ids(`?since=${since}`, bob)).toEqual([bobs]);
      // A zone offset reads as the same instant.
      const offset = new Date(idTime(second) + 3_600_000).toISOString().replace("Z", "+01:00");
      expect(await ids(`?since=${encodeURIComponent(offset)}`, alice)).toEqual(await ids(`?since=${since}`, alice));
      expect(await ids(`?since=${since}&limit=1`)).toEqual([bobs]);
      expect(await ids(`?since=${iso(idTime(first))}&caller=user:alice`)).toEqual([second, first]);
      expect(await ids(`?since=${iso(idTime(first))}&caller=user:bob`)).toEqual([bobs]);
      expect(await ids("?caller=user:nobody")).toEqual([]);

      await expectError(await t.fetch("/executions?caller=user:bob", { token: alice }), 403, "access_denied");
      await expectError(await t.fetch("/executions?since=2026-01-01T00:00:00Z", { token: null }), 401, "unauthorized");
      for (const [query, param] of [
        ["since=yesterday", "since"],
        ["since=2026-01-01T10:00:00", "since"], // no zone
        ["until=2026-02-30", "until"],
        ["since=2026-01-02&until=2026-01-01", "until"],
        ["caller=alice", "caller"],
        ["caller=robot:x", "caller"],
      ] as const) {
        const body = await expectError(await t.fetch(`/executions?${query}`), 400, "invalid_request");
        expect(body.details.issues[0]?.where).toBe(`/query/${param}`);
      }
    });

    test("GET /stats: service keys only; executions by status over the window, runs, failing actions, live sockets", async () => {
      await expectError(await t.fetch("/stats", { token: null }), 401, "unauthorized");
      await expectError(await t.fetch("/stats", { token: alice }), 403, "access_denied");
      await expectError(await t.fetch("/stats?window=25h"), 400, "invalid_request");
      await expectError(await t.fetch("/stats?window=1y"), 400, "invalid_request");

      const read = async (query = "") => {
        const res = await t.fetch(`/stats${query}`);
        expect(res.status).toBe(200);
        return res.json();
      };
      const before = await read();
      expect(Date.parse(before.window.until) - Date.parse(before.window.since)).toBe(3_600_000);
      expect((await t.invoke("test.echo", { text: "s" }, { token: alice })).status).toBe(200);
      expect((await t.invoke("test.fail", { message: "f" }, { token: bob })).status).toBe(200);
      const socket = new WebSocket(`${t.url.replace(/^http/, "ws")}/session`);
      await new Promise((resolve) => socket.addEventListener("open", resolve, { once: true }));
      try {
        const after = await eventually(async () => {
          const stats = await read("?window=15m");
          return stats.executions.failed === before.executions.failed + 1 ? stats : null;
        });
        expect(after.executions).toEqual({
          ...before.executions,
          succeeded: before.executions.succeeded + 1,
          failed: before.executions.failed + 1,
        });
        expect(Date.parse(after.window.until) - Date.parse(after.window.since)).toBe(15 * 60_000);
        expect(after.runs).toEqual({ queued: 0, running: 0, sleeping: 0, succeeded: 0, failed: 0, canceled: 0 });
        expect(after.activeRuns).toEqual({ queued: 0, running: 0, sleeping: 0 });
        // The failing action is named with its count; an action that only succeeded is not.
        const failedOf = (stats: { failingActions: { action: string; failed: number }[] }, action: string) =>
          stats.failingActions.find((a) => a.action === action)?.failed ?? 0;
        expect(failedOf(after, "test.fail")).toBe(failedOf(before, "test.fail") + 1);
        expect(after.failingActions.map((a: { action: string }) => a.action)).not.toContain("test.echo");
        expect(after.failingActions).toEqual(
          [...after.failingActions].sort((a, b) => b.failed - a.failed || a.action.localeCompare(b.action)),
        );
        expect(after.liveSockets).toBe(before.liveSockets + 1);
      } finally {
        socket.close();
      }
      await eventually(async () => (await read()).liveSockets === before.liveSockets);
    });
  });
}
