import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import packageJson from "../../package.json" with { type: "json" };
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { eventually, fixture, startTestServer, type TestResponse, type TestServer } from "../support/server.ts";

// Issue #43 item 4: operators can see the fleet (docs/decisions/fleet.md).

const ORIGIN = "https://app.example.com";
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** A refusal's body is the JSON error shape, with its code. */
const refused = async (res: TestResponse, status: number, code: string) => {
  expect(res.status).toBe(status);
  expect(await res.json()).toMatchObject({ ok: false, error: code, message: expect.any(String) });
};

for (const dialect of dialects) {
  describe(`the fleet seen from one instance (${dialect.name})`, () => {
    let t: TestServer;
    let alice: string;

    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic"), env: { CORS_ORIGINS: ORIGIN } });
      alice = await t.userToken("alice");
    });
    afterAll(() => t.stop());

    test("every response names the instance that answered, errors and probes included", async () => {
      const id = t.store.instances.id;
      const answers = [
        await t.invoke("test.echo", { text: "hello" }),
        await t.fetch("/executions"),
        await t.fetch("/executions", { token: null }),
        await t.fetch("/no/such/route"),
        await t.fetch("/healthz", { token: null }),
        await t.fetch("/actions/test.echo/invoke", { method: "POST", body: "{" }),
      ];
      expect(answers.map((res) => res.status)).toEqual([200, 200, 401, 404, 200, 400]);
      for (const res of answers) expect(res.headers.get("x-actuate-instance")).toBe(id);
    });

    test("a page on a listed origin may read the header (CORS exposes it)", async () => {
      const res = await t.fetch("/executions", { headers: { origin: ORIGIN } });
      expect(res.status).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBe(ORIGIN);
      const exposed = (res.headers.get("access-control-expose-headers") ?? "").split(/,\s*/);
      expect(exposed).toContain("x-actuate-instance");
    });

    test("GET /instances: 401 without a key, 403 for a user, this instance for a service key", async () => {
      await refused(await t.fetch("/instances", { token: null }), 401, "unauthorized");
      await refused(await t.fetch("/instances", { token: alice }), 403, "access_denied");
      const res = await t.fetch("/instances");
      expect(res.status).toBe(200);
      const { items } = (await res.json()) as { items: Record<string, unknown>[] };
      expect(items).toHaveLength(1);
      expect(items[0]).toEqual({
        id: t.store.instances.id,
        host: hostname(),
        pid: process.pid,
        startedAt: expect.stringMatching(ISO),
        lastHeartbeatAt: expect.stringMatching(ISO),
        // SQLite: one process and no heartbeat; PostgreSQL: its row's expiry.
        expiresAt: dialect.name === "sqlite" ? null : expect.stringMatching(ISO),
        version: packageJson.version,
        self: true,
      });
    });

    test("an execution names the instance that ran it to service keys only (PostgreSQL; SQLite has one)", async () => {
      const invoked = await t.invoke("test.echo", { text: "x" }, { token: alice });
      expect(invoked.status).toBe(200);
      const { execution } = (await invoked.json()) as { execution: { id: string; requestId: string } };
      const expected = dialect.name === "postgres" ? t.store.instances.id : undefined;
      const byService = [
        await t.fetch(`/executions/${execution.id}`),
        await t.fetch(`/executions/requests/${execution.requestId}?caller=user:alice`),
      ];
      const asService = (await byService[0]?.json()) as { instance?: string };
      expect(asService.instance).toBe(expected);
      const listed = (await (await t.fetch("/executions?caller=user:alice")).json()) as {
        items: { id: string; instance?: string }[];
      };
      expect(listed.items.find((item) => item.id === execution.id)?.instance).toBe(expected);
      const asAlice = (await (await t.fetch(`/executions/${execution.id}`, { token: alice })).json()) as object;
      expect(asAlice).not.toHaveProperty("instance");
      const aliceList = (await (await t.fetch("/executions", { token: alice })).json()) as { items: object[] };
      for (const item of aliceList.items) expect(item).not.toHaveProperty("instance");
    });
  });

  describe(`a run's lease holder (${dialect.name})`, () => {
    let t: TestServer;
    let alice: string;
    let dir: string;

    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("workflows") });
      alice = await t.userToken("alice");
      dir = mkdtempSync(join(tmpdir(), "actuate-lease-"));
    });
    afterAll(async () => {
      await t.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    test("GET /runs/{id} shows service keys who holds the lease and until when; a user sees neither", async () => {
      const gate = join(dir, "gate");
      const invoked = await t.invoke("wf.gated", { gate, log: join(dir, "log") }, { token: alice });
      expect(invoked.status).toBe(202);
      const { runId } = (await invoked.json()) as { runId: string };
      const held = await eventually(async () => {
        const run = (await (await t.fetch(`/runs/${runId}`)).json()) as Record<string, unknown>;
        return run.status === "running" && run.leaseHolder ? run : null;
      }, 15_000);
      expect(held).toMatchObject({ leaseHolder: t.store.instances.id, leaseExpiresAt: expect.stringMatching(ISO) });
      const asAlice = (await (await t.fetch(`/runs/${runId}`, { token: alice })).json()) as object;
      expect(asAlice).toMatchObject({ id: runId });
      expect(asAlice).not.toHaveProperty("leaseHolder");
      expect(asAlice).not.toHaveProperty("leaseExpiresAt");
      writeFileSync(gate, "");
      const ended = await eventually(async () => {
        const run = (await (await t.fetch(`/runs/${runId}`)).json()) as Record<string, unknown>;
        return run.status === "succeeded" ? run : null;
      }, 15_000);
      expect(ended).toMatchObject({ leaseHolder: null, leaseExpiresAt: null });
    }, 40_000);
  });

  describe(`the fleet in hosting mode (${dialect.name})`, () => {
    let t: HostingServer;
    const tokens: Record<string, string | null> = {};

    beforeAll(async () => {
      t = await startHostingServer(dialect, {
        environments: [{ handle: "acme-prod", organization: "acme", release: fixture("basic") }],
      });
      tokens.none = null;
      tokens.operator = t.serviceKey;
      tokens.org = await t.key({ organization: "acme" });
      tokens.env = await t.key({ environment: "acme-prod" });
      tokens.user = await t.userToken("acme-prod", "alice");
    }, 60_000);
    afterAll(() => t?.stop());

    test("the apex lists the instances to the operator key only; responses name the instance", async () => {
      const res = await t.fetch(null, "/instances");
      expect(res.status).toBe(200);
      expect(res.headers.get("x-actuate-instance")).toBe(t.store.instances.id);
      const { items } = (await res.json()) as { items: { id: string; self: boolean }[] };
      expect(items).toEqual([expect.objectContaining({ id: t.store.instances.id, self: true })]);
      await refused(await t.fetch(null, "/instances", { token: null }), 401, "unauthorized");
      for (const who of ["org", "env", "user"])
        await refused(
          await t.fetch(null, "/instances", { token: tokens[who] }),
          who === "user" ? 401 : 403,
          who === "user" ? "unauthorized" : "access_denied",
        );
    });

    test("an environment's host refuses GET /instances to every key, its own included", async () => {
      const echo = await t.invoke("acme-prod", "test.echo", { text: "x" }, { token: tokens.env });
      expect(echo.status).toBe(200);
      expect(echo.headers.get("x-actuate-instance")).toBe(t.store.instances.id);
      await refused(await t.fetch("acme-prod", "/instances", { token: null }), 401, "unauthorized");
      for (const who of ["env", "user"])
        await refused(await t.fetch("acme-prod", "/instances", { token: tokens[who] }), 403, "access_denied");
    });
  });
}
