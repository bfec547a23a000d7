import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ServiceLoops } from "../../src/runtime/service-loops.ts";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { eventually, fixture, type TestResponse } from "../support/server.ts";

// Issue #44 §2: previews on the apex (hosting mode): paused schedules, TTL expiry, promote, forks
// (docs/decisions/previews.md), each route's callers first.

/** The data fixture under another version, with `extra` actions written into it. */
function dataRelease(version: string, extra: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "actuate-forks-"));
  cpSync(fixture("data"), dir, { recursive: true });
  const release = join(dir, "release.ts");
  writeFileSync(release, readFileSync(release, "utf8").replace(/version: "d1"/, `version: "${version}"`));
  for (const [name, body] of Object.entries(extra)) writeFileSync(join(dir, "actions", "data", `${name}.ts`), body);
  return dir;
}

const HELLO = (word: string) => `import { defineAction, Type } from "actuate";
export default defineAction({
  description: "Answers a word fixed in the release",
  input: Type.Object({}),
  output: Type.Object({ word: Type.String() }),
  handler: async () => ({ word: "${word}" }),
});
`;

/** A release with one schedule ticking every second. */
function ticking(version: string): string {
  const dir = mkdtempSync(join(tmpdir(), "actuate-forks-"));
  cpSync(fixture("schedules"), dir, { recursive: true });
  writeFileSync(
    join(dir, "release.ts"),
    `import { defineRelease } from "actuate";
export default defineRelease({
  version: "${version}",
  schedules: { beat: { every: "1s", action: "sched.ping", input: { note: "beat" } } },
});
`,
  );
  return dir;
}

type Caller = "none" | "operator" | "org" | "otherOrg" | "env" | "otherEnv";
const CALLERS: Caller[] = ["none", "operator", "org", "otherOrg", "env", "otherEnv"];

for (const dialect of dialects) {
  describe(`previews on the apex (${dialect.name})`, () => {
    let t: HostingServer;
    const logged: string[] = [];
    const tokens = {} as Record<Caller, string | null>;

    beforeAll(async () => {
      t = await startHostingServer(dialect, {
        environments: [
          { handle: "acme-prod", organization: "acme", release: fixture("data") },
          { handle: "acme-stage", organization: "acme", release: fixture("data") },
          { handle: "beta-prod", organization: "beta" },
        ],
        env: { EXPIRY_SWEEP_MS: "100", WORKFLOW_POLL_MS: "100" },
        log: (message) => logged.push(message),
      });
      tokens.none = null;
      tokens.operator = t.serviceKey;
      tokens.org = await t.key({ organization: "acme" });
      tokens.otherOrg = await t.key({ organization: "beta" });
      tokens.env = await t.key({ environment: "acme-prod" });
      tokens.otherEnv = await t.key({ environment: "acme-stage" });
    }, 60_000);
    afterAll(() => t?.stop());

    const apex = (path: string, init: RequestInit & { token?: string | null; json?: unknown } = {}) =>
      t.fetch(null, path, {
        ...init,
        ...(init.json === undefined
          ? {}
          : { body: JSON.stringify(init.json), headers: { "content-type": "application/json" } }),
      });
    const refused = async (res: TestResponse, status: number, code: string) => {
      expect(res.status).toBe(status);
      expect(await res.json()).toMatchObject({ ok: false, error: code, message: expect.any(String) });
    };
    const loops = () => t.server.serviceLoops as ServiceLoops;

    test("PATCH /environments/{handle}: 401 without a key, another environment's key 403, another organization's 404, its own, its organization's and the operator's 200", async () => {
      const expected: Record<Caller, [number, string?]> = {
        none: [401, "unauthorized"],
        operator: [200],
        org: [200],
        otherOrg: [404, "environment_not_found"],
        env: [200],
        otherEnv: [403, "access_denied"],
      };
      for (const caller of CALLERS) {
        const res = await apex("/environments/acme-prod", {
          method: "PATCH",
          token: tokens[caller],
          json: { schedulesPaused: false },
        });
        const [status, code] = expected[caller];
        if (code) await refused(res, status, code);
        else {
          expect(res.status).toBe(status);
          expect(await res.json()).toMatchObject({ handle: "acme-prod", schedulesPaused: false });
        }
      }
      // Another environment's key is refused alike for a handle that does not exist (nothing to learn).
      await refused(
        await apex("/environments/nowhere", { method: "PATCH", token: tokens.otherEnv, json: {} }),
        403,
        "access_denied",
      );
      await refused(
        await apex("/environments/acme-prod", { method: "PATCH", json: { schedulesPaused: "yes" } }),
        400,
        "invalid_request",
      );
    });

    test("POST /environments/{to}/promote: 401 without a key; a key must act on both environments", async () => {
      const expected: Record<Caller, [number, string?]> = {
        none: [401, "unauthorized"],
        operator: [200],
        org: [200],
        otherOrg: [404, "environment_not_found"],
        // An environment key acts on its own environment only: never on both.
        env: [403, "access_denied"],
        otherEnv: [403, "access_denied"],
      };
      for (const caller of CALLERS) {
        const res = await apex("/environments/acme-stage/promote", {
          method: "POST",
          token: tokens[caller],
          json: { from: "acme-prod" },
        });
        const [status, code] = expected[caller];
        if (code) await refused(res, status, code);
        else {
          expect(res.status).toBe(status);
          expect(await res.json()).toMatchObject({ from: "acme-prod", to: "acme-stage", version: "d1" });
        }
      }
    });

    test("GET /environments/{handle} and the list show forkedFrom, expiresAt and schedulesPaused", async () => {
      const one = await (await apex("/environments/acme-prod")).json();
      expect(one).toMatchObject({ handle: "acme-prod", forkedFrom: null, expiresAt: null, schedulesPaused: false });
      const list = await (await apex("/environments?organization=acme")).json();
      expect(list.items.map((e: { handle: string }) => e.handle)).toEqual(["acme-prod", "acme-stage"]);
      for (const item of list.items) expect(item).toMatchObject({ forkedFrom: null, expiresAt: null });
    });

    test("promote publishes the source's active release to the target, with the contract diff, and activates it", async () => {
      await t.publish("acme-prod", dataRelease("d2", { hello: HELLO("from d2") }));
      const res = await apex("/environments/acme-stage/promote", { method: "POST", json: { from: "acme-prod" } });
      expect(res.status).toBe(200);
      const answer = await res.json();
      expect(answer).toMatchObject({ version: "d2", status: "published", activated: true, previous: "d1" });
      expect(answer.changes).toContainEqual(expect.objectContaining({ name: "data.hello", change: "added" }));
      // Served at once by this instance.
      const invoked = await t.invoke("acme-stage", "data.hello", {});
      expect(invoked.status).toBe(200);
      expect((await invoked.json()).execution.output).toEqual({ word: "from d2" });
      // The same version with the same content: only activated.
      const again = await (
        await apex("/environments/acme-stage/promote", { method: "POST", json: { from: "acme-prod" } })
      ).json();
      expect(again).toMatchObject({ version: "d2", status: "existing", activated: true });
    }, 30_000);

    test("promote refuses what publish refuses: a version the target holds with other content", async () => {
      await t.publish("acme-stage", dataRelease("d3", { hello: HELLO("stage's d3") }));
      await t.publish("acme-prod", dataRelease("d3", { hello: HELLO("prod's d3") }));
      const res = await apex("/environments/acme-stage/promote", { method: "POST", json: { from: "acme-prod" } });
      await refused(res, 409, "release_conflict");
      const stage = await (await apex("/environments/acme-stage")).json();
      expect(stage.activeVersion).toBe("d3");
      // t.publish wrote the rows as the CLI does: the server serves d3 from its next poll, and never prod's.
      const word = async () => (await (await t.invoke("acme-stage", "data.hello", {})).json()).execution.output.word;
      await eventually(async () => (await word()) === "stage's d3");
      expect(await word()).toBe("stage's d3");
      // Into itself: refused (it would only bump the revision).
      await refused(
        await apex("/environments/acme-stage/promote", { method: "POST", json: { from: "acme-stage" } }),
        400,
        "invalid_request",
      );
      // An environment with no active release has nothing to promote.
      await refused(
        await apex("/environments/acme-stage/promote", { method: "POST", json: { from: "beta-prod" } }),
        404,
        "release_not_found",
      );
    }, 30_000);

    test("paused schedules do not tick while another environment's do; resumed, the next tick runs", async () => {
      await t.create({ handle: "acme-tick", organization: "acme" });
      await t.create({ handle: "acme-paused", organization: "acme" });
      const paused = await apex("/environments/acme-paused", { method: "PATCH", json: { schedulesPaused: true } });
      expect((await paused.json()).schedulesPaused).toBe(true);
      await t.publish("acme-tick", ticking("t1"));
      await t.publish("acme-paused", ticking("t1"));
      const executionsOf = async (handle: string) =>
        t.store.environment(await t.id(handle)).executions.list({ limit: 10, maxValueBytes: 1_000 });
      // Two ticks of the other environment: the schedule loop took turns since the paused one was due.
      await eventually(async () => (await executionsOf("acme-tick")).length >= 2, 15_000);
      expect(await executionsOf("acme-paused")).toEqual([]);
      const resumed = await apex("/environments/acme-paused", { method: "PATCH", json: { schedulesPaused: false } });
      expect((await resumed.json()).schedulesPaused).toBe(false);
      const ticked = await eventually(async () => {
        const page = await executionsOf("acme-paused");
        return page.length > 0 ? page : null;
      }, 15_000);
      expect(ticked?.[0]).toMatchObject({ action: "sched.ping", principalId: "schedule:beat" });
      expect(loops().counts.schedules.turns).toBeGreaterThan(0);
    }, 40_000);

    test("an environment whose TTL passed is deleted by the service, as env delete --yes does, and logged", async () => {
      const id = await t.create({ handle: "acme-temp", organization: "acme" });
      await t.publish("acme-temp", fixture("data"));
      expect((await t.invoke("acme-temp", "data.add-note", { title: "t", priority: 1 })).status).toBe(200);
      const expiresAt = Date.now() + 1_000;
      await t.store.control.environments.setExpiresAt(id, expiresAt);
      const shown = await (await apex("/environments/acme-temp")).json();
      expect(shown.expiresAt).toBe(new Date(expiresAt).toISOString());
      await eventually(async () => (await apex("/environments/acme-temp")).status === 404, 15_000);
      expect(await t.store.control.environments.byId(id)).toBeNull();
      expect(logged.some((line) => line.startsWith("expiry: deleted environment acme-temp"))).toBe(true);
      // Its host answers as for an unknown environment.
      await eventually(
        async () => (await t.invoke("acme-temp", "data.add-note", { title: "t", priority: 1 })).status === 404,
      );
    }, 30_000);

    test("POST /environments/{handle}/fork: 401 without a key, another environment's key 403, another organization's 404; its own key, its organization's and the operator's 201", async () => {
      const expected: Record<Caller, [number, string?]> = {
        none: [401, "unauthorized"],
        operator: [201],
        org: [201],
        otherOrg: [404, "environment_not_found"],
        env: [201],
        otherEnv: [403, "access_denied"],
      };
      for (const caller of CALLERS) {
        const res = await apex("/environments/acme-prod/fork", {
          method: "POST",
          token: tokens[caller],
          json: { handle: `acme-by-${caller.toLowerCase()}` },
        });
        const [status, code] = expected[caller];
        if (code) await refused(res, status, code);
        else {
          expect(res.status).toBe(status);
          expect(await res.json()).toMatchObject({
            handle: `acme-by-${caller.toLowerCase()}`,
            organization: "acme",
            forkedFrom: "acme-prod",
            expiresAt: null,
            schedulesPaused: true,
          });
        }
      }
      // Another environment's key may not fork a handle that does not exist either (403, nothing learnt).
      await refused(
        await apex("/environments/nowhere/fork", { method: "POST", token: tokens.otherEnv, json: { handle: "x-1" } }),
        403,
        "access_denied",
      );
      // An environment key forks within its organization only.
      await refused(
        await apex("/environments/acme-prod/fork", {
          method: "POST",
          token: tokens.env,
          json: { handle: "acme-elsewhere", organization: "beta" },
        }),
        403,
        "access_denied",
      );
    }, 30_000);

    test("a fork's refusals: a taken handle, a bad TTL, an unknown field", async () => {
      await refused(
        await apex("/environments/acme-prod/fork", { method: "POST", json: { handle: "acme-stage" } }),
        409,
        "handle_taken",
      );
      await refused(
        await apex("/environments/acme-prod/fork", { method: "POST", json: { handle: "acme-ttl", ttl: "91d" } }),
        400,
        "invalid_request",
      );
      await refused(
        await apex("/environments/acme-prod/fork", { method: "POST", json: { handle: "acme-ttl", ttl: "soon" } }),
        400,
        "invalid_request",
      );
      await refused(
        await apex("/environments/acme-prod/fork", { method: "POST", json: { handle: "acme-ttl", copy: true } }),
        400,
        "invalid_request",
      );
      expect(await t.store.control.environments.byHandle("acme-ttl")).toBeNull();
    });

    const notesOf = async (handle: string): Promise<string[]> => {
      const res = await t.invoke(handle, "data.query", { query: { notes: {} } });
      expect(res.status).toBe(200);
      const { result } = (await res.json()).execution.output;
      return (result.notes as { title: string }[]).map((n) => n.title).sort();
    };

    test("a fork with data serves at once with the source's data; afterwards their writes are their own", async () => {
      await t.invoke("acme-prod", "data.add-note", { title: "before the fork", priority: 1 });
      const res = await apex("/environments/acme-prod/fork", {
        method: "POST",
        json: { handle: "acme-pr-1", data: true, ttl: "7d" },
      });
      expect(res.status).toBe(201);
      const fork = await res.json();
      expect(fork).toMatchObject({ handle: "acme-pr-1", forkedFrom: "acme-prod", url: t.at("acme-pr-1") });
      expect(fork.copied.entities).toBeGreaterThanOrEqual(1);
      expect(fork.copied.releases).toBeGreaterThanOrEqual(2);
      const expiresIn = Date.parse(fork.expiresAt) - Date.now();
      expect(expiresIn).toBeGreaterThan(7 * 86_400_000 - 60_000);
      expect(expiresIn).toBeLessThanOrEqual(7 * 86_400_000);
      const source = await (await apex("/environments/acme-prod")).json();
      expect(fork.activeVersion).toBe(source.activeVersion);
      expect(await notesOf("acme-pr-1")).toContain("before the fork");
      await t.invoke("acme-pr-1", "data.add-note", { title: "in the fork", priority: 2 });
      await t.invoke("acme-prod", "data.add-note", { title: "in the source", priority: 3 });
      const [inFork, inSource] = [await notesOf("acme-pr-1"), await notesOf("acme-prod")];
      expect(inFork).toContain("in the fork");
      expect(inFork).not.toContain("in the source");
      expect(inSource).toContain("in the source");
      expect(inSource).not.toContain("in the fork");
      // The listing shows where it came from.
      const listed = await (await apex("/environments?organization=acme")).json();
      expect(listed.items.find((e: { handle: string }) => e.handle === "acme-pr-1")).toMatchObject({
        forkedFrom: "acme-prod",
        expiresAt: fork.expiresAt,
      });
    }, 30_000);

    test("a fork without data has the release and no entities", async () => {
      const res = await apex("/environments/acme-prod/fork", { method: "POST", json: { handle: "acme-pr-2" } });
      expect(res.status).toBe(201);
      const fork = await res.json();
      expect(fork.copied).toMatchObject({ entities: 0, links: 0, files: 0 });
      expect(await notesOf("acme-pr-2")).toEqual([]);
    }, 30_000);

    test("a fork of a release that declares secrets is refused without secrets, naming them", async () => {
      // A release whose manifest declares a secret, stored as a publish stores it.
      const id = await t.create({ handle: "acme-secret", organization: "acme" });
      const prod = t.store.environment(await t.id("acme-prod")).releases;
      const row = await prod.get((await prod.active()).version as string);
      if (!row) throw new Error("acme-prod has no active release");
      const releases = t.store.environment(id).releases;
      const manifest = {
        ...(row.manifest as object),
        env: { STRIPE_KEY: { secret: true }, REGION: { secret: false } },
      };
      await releases.insert({ ...row, version: "s1", manifest, createdAt: Date.now() });
      await releases.activate("s1", Date.now(), false);
      const res = await apex("/environments/acme-secret/fork", { method: "POST", json: { handle: "acme-secret-pr" } });
      await refused(res.clone() as TestResponse, 409, "secrets_required");
      const body = await res.json();
      expect(body.message).toContain("STRIPE_KEY");
      expect(body.secrets).toEqual(["STRIPE_KEY"]);
      expect(await t.store.control.environments.byHandle("acme-secret-pr")).toBeNull();
      const allowed = await apex("/environments/acme-secret/fork", {
        method: "POST",
        json: { handle: "acme-secret-pr", secrets: true },
      });
      expect(allowed.status).toBe(201);
    }, 30_000);

    test("a fork whose TTL passed is deleted; its source stays whole", async () => {
      const res = await apex("/environments/acme-prod/fork", {
        method: "POST",
        json: { handle: "acme-pr-3", data: true, ttl: "30m" },
      });
      expect(res.status).toBe(201);
      const id = await t.id("acme-pr-3");
      await t.store.control.environments.setExpiresAt(id, Date.now());
      await eventually(async () => (await apex("/environments/acme-pr-3")).status === 404, 15_000);
      expect(
        logged.some((line) => line.startsWith("expiry: deleted environment acme-pr-3 (forked from acme-prod)")),
      ).toBe(true);
      expect(await notesOf("acme-prod")).toContain("before the fork");
    }, 30_000);
  });
}
