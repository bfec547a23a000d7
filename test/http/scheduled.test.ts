import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { importJWK, SignJWT } from "jose";
import { authorityKeys } from "../../src/auth/authority/keys.ts";
import { GRANT_CLAIM } from "../../src/auth/sign-ins.ts";
import { addUser } from "../../src/auth/users.ts";
import { dialects } from "../support/databases.ts";
import { storeGrant } from "../support/oauth-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

/** The schedules fixture without its cron schedules: only what the tests schedule runs. */
function quietRelease(): string {
  const dir = mkdtempSync(join(tmpdir(), "actuate-scheduled-"));
  cpSync(fixture("schedules"), dir, { recursive: true });
  writeFileSync(
    join(dir, "release.ts"),
    `import { defineRelease } from "actuate";\nexport default defineRelease({ version: "d1" });\n`,
  );
  return dir;
}

for (const dialect of dialects) {
  describe(`delayed invocations (${dialect.name})`, () => {
    let t: TestServer;
    let alice: string;
    let bob: string;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: quietRelease(), env: { WORKFLOW_POLL_MS: "100" } });
      alice = await t.userToken("alice");
      bob = await t.userToken("bob");
    });
    afterAll(() => t.stop());

    const schedule = async (input: Record<string, unknown>, token = alice, requestId = crypto.randomUUID()) => {
      const res = await t.invoke("sched.later", input, { token, requestId });
      return { status: res.status, body: await res.json(), requestId };
    };
    const scheduled = async (id: string, token: string | null = alice) => t.fetch(`/scheduled/${id}`, { token });
    const startedOf = (id: string, token = alice) =>
      eventually(async () => {
        const body = await (await scheduled(id, token)).json();
        return body.status === "started" ? body : null;
      }, 10_000);

    test("ctx.schedule stores the invocation with the execution; when due it runs as its scheduler, recorded like any execution", async () => {
      const { body, requestId } = await schedule({ note: "hello", afterMs: 200 });
      expect(body.execution.status).toBe("succeeded");
      const { id } = body.execution.output;
      const pending = await (await scheduled(id)).json();
      expect(pending).toMatchObject({
        id,
        action: "sched.record",
        input: { note: "hello" },
        status: "pending",
        principal: { kind: "user", id: "alice" },
        scheduledBy: body.execution.id,
        requestId: id,
        executionId: null,
      });
      expect(Date.parse(pending.dueAt) - Date.parse(pending.createdAt)).toBe(200);

      const started = await startedOf(id);
      const execution = await eventually(async () => {
        const e = await (await t.fetch(`/executions/${started.executionId}`, { token: alice })).json();
        return e.status === "succeeded" ? e : null;
      });
      expect(execution).toMatchObject({
        action: "sched.record",
        requestId: id,
        output: { note: "hello", by: "user:alice" },
        // The execution record names the execution whose ctx.schedule made it.
        scheduledBy: body.execution.id,
      });
      expect(body.execution.scheduledBy).toBeUndefined();
      expect((await t.fetch(`/executions/${started.executionId}`, { token: bob })).status).toBe(404);

      // A replay of the scheduling request runs nothing: nothing is scheduled again.
      const replay = await schedule({ note: "hello", afterMs: 200 }, alice, requestId);
      expect(replay.body.execution.id).toBe(body.execution.id);
      const mine = await (await t.fetch("/scheduled", { token: alice })).json();
      expect(mine.items.filter((s: { scheduledBy: string }) => s.scheduledBy === body.execution.id)).toHaveLength(1);
    }, 30_000);

    test("a failing execution schedules nothing; ctx.cancelScheduled in the same execution cancels with its writes", async () => {
      const failing = await schedule({ note: "never", afterMs: 0, fail: true });
      expect(failing.body.execution.status).toBe("failed");
      const all = await (await t.fetch("/scheduled?limit=200")).json();
      expect(all.items.some((s: { scheduledBy: string }) => s.scheduledBy === failing.body.execution.id)).toBe(false);

      const canceled = await schedule({ note: "undone", afterMs: 0, cancel: true });
      expect(canceled.body.execution.status).toBe("succeeded");
      const row = await (await scheduled(canceled.body.execution.output.id)).json();
      expect(row).toMatchObject({ status: "canceled", executionId: null });
    });

    test("a given requestId is the invocation's: the same request id later is a replay of it", async () => {
      const requestId = crypto.randomUUID();
      const first = await schedule({ note: "once", afterMs: 0, requestId });
      const second = await schedule({ note: "once", afterMs: 0, requestId });
      const [a, b] = await Promise.all([
        startedOf(first.body.execution.output.id),
        startedOf(second.body.execution.output.id),
      ]);
      expect(a.requestId).toBe(requestId);
      expect(a.executionId).toBe(b.executionId);
    }, 30_000);

    test("DELETE /scheduled/{id}: the owner cancels a pending one (again is fine), not a started one; others get 404; none 401", async () => {
      const { body } = await schedule({ note: "later", afterMs: 3_600_000 });
      const { id } = body.execution.output;
      expect((await t.fetch(`/scheduled/${id}`, { method: "DELETE", token: bob })).status).toBe(404);
      expect((await scheduled(id, bob)).status).toBe(404);
      const anonymous = await t.fetch(`/scheduled/${id}`, { method: "DELETE", token: null });
      expect(anonymous.status).toBe(401);
      const user = await t.fetch(`/scheduled/${id}`, { method: "DELETE", token: alice });
      expect(user.status).toBe(200);
      expect(await user.json()).toMatchObject({ id, status: "canceled" });
      expect((await t.fetch(`/scheduled/${id}`, { method: "DELETE", token: alice })).status).toBe(200);
      expect((await t.fetch("/scheduled/not-an-id", { method: "DELETE", token: alice })).status).toBe(404);

      const soon = await schedule({ note: "soon", afterMs: 0 });
      await startedOf(soon.body.execution.output.id);
      const late = await t.fetch(`/scheduled/${soon.body.execution.output.id}`, { method: "DELETE", token: alice });
      expect(late.status).toBe(409);
      expect(await late.json()).toMatchObject({ ok: false, error: "scheduled_not_cancelable" });
    }, 30_000);

    test("GET /scheduled: the caller's own, by status; a service key sees all; no credential 401; a bad status 400", async () => {
      const { body } = await schedule({ note: "bob's", afterMs: 3_600_000 }, bob);
      const bobs = await (await t.fetch("/scheduled?status=pending", { token: bob })).json();
      expect(bobs.items.map((s: { id: string }) => s.id)).toEqual([body.execution.output.id]);
      const alices = await (await t.fetch("/scheduled", { token: alice })).json();
      expect(alices.items.length).toBeGreaterThan(0);
      expect(alices.items.every((s: { principal: { id: string } }) => s.principal.id === "alice")).toBe(true);
      const service = await (await t.fetch("/scheduled?limit=200")).json();
      expect(new Set(service.items.map((s: { principal: { id: string } }) => s.principal.id))).toEqual(
        new Set(["alice", "bob"]),
      );
      expect((await t.fetch("/scheduled", { token: null })).status).toBe(401);
      const bad = await t.fetch("/scheduled?status=done");
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ ok: false });
      const paged = await (await t.fetch("/scheduled?limit=1", { token: alice })).json();
      expect(paged.items).toHaveLength(1);
      const next = await (await t.fetch(`/scheduled?limit=1&cursor=${paged.nextCursor}`, { token: alice })).json();
      expect(next.items[0].id < paged.items[0].id).toBe(true);
    });

    test("a due invocation runs with the verified claims its scheduler had (a JWT of the built-in authority)", async () => {
      await addUser(t.store, "carol", "a long enough password");
      const { signing } = await authorityKeys(t.store.oauth, Date.now());
      const jwt = await new SignJWT({
        sub: "carol",
        scope: "mcp",
        role: "editor",
        [GRANT_CLAIM]: await storeGrant(t.store, "carol"),
      })
        .setProtectedHeader({ alg: "RS256", kid: signing.kid as string, typ: "at+jwt" })
        .setIssuer(t.url)
        .setAudience(`${t.url}/mcp`)
        .setIssuedAt()
        .setExpirationTime("5m")
        .sign(await importJWK(signing, "RS256"));
      const { body } = await schedule({ note: "with claims", afterMs: 0 }, jwt);
      expect(body.execution.status).toBe("succeeded");
      const started = await startedOf(body.execution.output.id, jwt);
      const execution = await eventually(async () => {
        const e = await (await t.fetch(`/executions/${started.executionId}`)).json();
        return e.status === "succeeded" ? e : null;
      });
      expect(execution.output).toEqual({ note: "with claims", by: "user:carol", role: "editor" });
    }, 30_000);

    test("a due invocation its principal may not run is recorded as a failed execution access_denied", async () => {
      const { body } = await schedule({ note: "sneaky", afterMs: 0, action: "sched.admin" });
      const started = await startedOf(body.execution.output.id);
      const execution = await (await t.fetch(`/executions/${started.executionId}`, { token: alice })).json();
      expect(execution).toMatchObject({
        action: "sched.admin",
        status: "failed",
        errorCode: "access_denied",
        scheduledBy: body.execution.id,
      });
    }, 30_000);

    test("from a workflow step it is stored with the step's checkpoint; outside a step it is refused", async () => {
      const res = await t.invoke("sched.plan", { note: "from a step", outside: true }, { token: alice });
      expect(res.status).toBe(202);
      const { runId } = await res.json();
      const run = await eventually(async () => {
        const r = await (await t.fetch(`/runs/${runId}`, { token: alice })).json();
        return r.status === "succeeded" ? r : null;
      }, 10_000);
      expect(run.output.refused).toContain("ctx.schedule outside a step");
      const started = await startedOf(run.output.id);
      expect(started.scheduledBy).toBe(runId);
      const mine = await (await t.fetch("/scheduled?limit=200", { token: alice })).json();
      expect(mine.items.filter((s: { scheduledBy: string }) => s.scheduledBy === runId)).toHaveLength(1);
    }, 30_000);
  });
}
