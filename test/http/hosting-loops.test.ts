import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { LoopCounts, LoopName } from "../../src/runtime/service-loops.ts";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { LiveClient } from "../support/live-client.ts";
import { eventually, fixture } from "../support/server.ts";

// Issue #41 §5: one set of loops per hosting process claims the due work of every environment, so an
// environment nobody has asked for since the process started still has its runs resumed, its delayed
// invocations started, its schedules ticked and its old executions forgotten, with as many database
// statements per turn for 50 composed environments as for 1.

/** The schedules fixture without its schedules: only what the tests schedule runs. */
function quietSchedules(): string {
  const dir = mkdtempSync(join(tmpdir(), "actuate-loops-"));
  cpSync(fixture("schedules"), dir, { recursive: true });
  writeFileSync(
    join(dir, "release.ts"),
    `import { defineRelease } from "actuate";\nexport default defineRelease({ version: "d1" });\n`,
  );
  return dir;
}

/** A release with one schedule ticking every second. */
function ticking(): string {
  const dir = mkdtempSync(join(tmpdir(), "actuate-loops-"));
  cpSync(fixture("schedules"), dir, { recursive: true });
  writeFileSync(
    join(dir, "release.ts"),
    `import { defineRelease } from "actuate";
export default defineRelease({
  version: "t1",
  schedules: { beat: { every: "1s", action: "sched.ping", input: { note: "beat" } } },
});
`,
  );
  return dir;
}

const LOOPS: LoopName[] = ["workflows", "delayed", "schedules"];

/** Statements per turn of each claiming loop over the turns between two readings. */
function perTurn(before: LoopCounts, after: LoopCounts): Record<string, number> {
  return Object.fromEntries(
    LOOPS.map((loop) => {
      const turns = after[loop].turns - before[loop].turns;
      const queries = after[loop].queries - before[loop].queries;
      return [loop, turns === 0 ? Number.NaN : queries / turns];
    }),
  );
}

const snapshot = (counts: LoopCounts): LoopCounts => structuredClone(counts);

for (const dialect of dialects) {
  describe(`hosting: one set of loops for every environment (${dialect.name})`, () => {
    let t: HostingServer;
    const loops = () => {
      const found = t.server.serviceLoops;
      if (!found) throw new Error("no service loops: not hosting mode?");
      return found;
    };
    const composed = () => (t.server.environments as unknown as { ids(): number[] }).ids();

    beforeAll(async () => {
      t = await startHostingServer(dialect, {
        environments: [
          { handle: "acme-flow", organization: "acme", release: fixture("workflows") },
          { handle: "acme-later", organization: "acme", release: quietSchedules() },
          { handle: "acme-tick", organization: "acme" },
          { handle: "acme-live", organization: "acme", release: fixture("basic") },
          { handle: "acme-held-1", organization: "acme", release: fixture("workflows") },
          { handle: "acme-held-2", organization: "acme", release: fixture("workflows") },
        ],
        env: { WORKFLOW_POLL_MS: "100", WORKFLOW_LEASE_MS: "3000" },
      });
    });
    afterAll(() => t.stop());

    test("a workflow run due after a sleep resumes on an instance that was never asked for its environment", async () => {
      const other = await t.another();
      const invoked = await other.invoke("acme-flow", "wf.nap", { ms: 700 });
      expect(invoked.status).toBe(202);
      const { runId } = await invoked.json();
      const runs = t.store.environment(await t.id("acme-flow")).runs;
      await eventually(async () => (await runs.get(runId))?.status === "sleeping");
      // The instance that started it goes: only `t`, never asked for acme-flow, is left to resume it (were
      // it composed here, it is evicted first: only the workflow loop's claim may compose it again).
      await other.stop();
      await t.server.environments?.evict(await t.id("acme-flow"));
      expect(composed()).not.toContain(await t.id("acme-flow"));
      const ended = await eventually(async () => {
        const run = await runs.get(runId);
        return run?.status === "succeeded" ? run : null;
      }, 10_000);
      expect(ended?.leaseOwner).toBeNull();
      expect(composed()).toContain(await t.id("acme-flow"));
    });

    test("a delayed invocation starts on an instance that was never asked for its environment", async () => {
      const other = await t.another();
      const answer = await other.invoke("acme-later", "sched.later", { note: "later", afterMs: 600 });
      expect(answer.status).toBe(200);
      const { id } = (await answer.json()).execution.output;
      await other.stop();
      const invocations = t.store.environment(await t.id("acme-later")).delayedInvocations;
      expect((await invocations.get(id))?.status).toBe("pending");
      const started = await eventually(async () => {
        const row = await invocations.get(id);
        return row?.status === "started" ? row : null;
      }, 10_000);
      const execution = await t.store
        .environment(await t.id("acme-later"))
        .executions.get(started?.executionId as string);
      expect(execution?.action).toBe("sched.record");
    });

    test("a release with a schedule published while no instance has its environment: its ticks run", async () => {
      const id = await t.id("acme-tick");
      expect(composed()).not.toContain(id);
      await t.publish("acme-tick", ticking());
      const executions = t.store.environment(id).executions;
      const ticked = await eventually(async () => {
        const page = await executions.list({ limit: 10, maxValueBytes: 1_000 });
        return page.length > 0 ? page : null;
      }, 10_000);
      expect(ticked?.[0]).toMatchObject({ action: "sched.ping", principalId: "schedule:beat" });
    });

    test("the statements per turn of each loop are the same with 50 environments composed as with 1", async () => {
      await eventually(() => LOOPS.every((loop) => loops().counts[loop].turns > 0));
      const one = snapshot(loops().counts);
      await eventually(() => LOOPS.every((loop) => loops().counts[loop].turns >= one[loop].turns + 3), 10_000);
      const withFew = perTurn(one, loops().counts);

      for (let i = 0; i < 50; i++) {
        await t.create({ handle: `many-${i}`, organization: "many" });
        const answer = await t.fetch(`many-${i}`, "/actions");
        expect(answer.status).toBe(503);
      }
      expect(composed().length).toBeGreaterThanOrEqual(50);
      const many = snapshot(loops().counts);
      await eventually(() => LOOPS.every((loop) => loops().counts[loop].turns >= many[loop].turns + 3), 10_000);
      const withMany = perTurn(many, loops().counts);
      expect(withMany).toEqual(withFew);
      // One claim per turn, and one look ahead when nothing was due.
      expect(withMany.workflows).toBe(1);
    });

    test("a release published into an environment is served by an instance that has it composed within the bound", async () => {
      const before = await t.fetch("acme-live", "/actions");
      expect(before.status).toBe(200);
      await t.publish("acme-live", fixture("basic-v2"));
      const names = async () =>
        ((await (await t.fetch("acme-live", "/actions")).json()).items as { name: string }[]).map((a) => a.name);
      expect(await names()).not.toContain("test.added");
      await eventually(async () => (await names()).includes("test.added"), 3_000);
    });

    test("the leases of runs held in several environments are renewed by one statement per beat", async () => {
      const dir = mkdtempSync(join(tmpdir(), "actuate-gate-"));
      const gate = join(dir, "open");
      const handles = ["acme-held-1", "acme-held-2"];
      const runIds: string[] = [];
      for (const handle of handles) {
        const answer = await t.invoke(handle, "wf.gated", { gate, log: join(dir, `${handle}.log`) });
        expect(answer.status).toBe(202);
        runIds.push((await answer.json()).runId);
      }
      const runOf = async (i: number) =>
        t.store.environment(await t.id(handles[i] as string)).runs.get(runIds[i] as string);
      const first = await Promise.all(runIds.map((_, i) => runOf(i)));
      const leases = loops().counts.leases;
      const before = { ...leases };
      // Renewed past the lease its admission took, in both environments.
      await eventually(async () => {
        const now = await Promise.all(runIds.map((_, i) => runOf(i)));
        return now.every((run, i) => (run?.leaseExpiresAt ?? 0) > (first[i]?.leaseExpiresAt ?? 0));
      }, 10_000);
      expect(leases.turns).toBeGreaterThan(before.turns);
      expect(leases.queries - before.queries).toBe(leases.turns - before.turns);
      writeFileSync(gate, "");
      for (const i of [0, 1]) await eventually(async () => (await runOf(i))?.status === "succeeded", 10_000);
    });

    test("deleting an environment closes its live sockets and makes it 404, on every instance", async () => {
      const id = await t.create({ handle: "acme-gone", organization: "acme" });
      await t.publish("acme-gone", fixture("basic"));
      const other = await t.another();
      for (const instance of [t, other]) expect((await instance.fetch("acme-gone", "/actions")).status).toBe(200);
      const sockets = [t, other].map(
        (instance) => new WebSocket(`${instance.at("acme-gone").replace("http", "ws")}/session`),
      );
      await Promise.all(sockets.map((socket) => new Promise((resolve) => (socket.onopen = resolve))));
      const closed = sockets.map((socket) => new Promise<CloseEvent>((resolve) => (socket.onclose = resolve)));

      await t.store.control.environments.delete(id, async () => {});
      for (const event of await Promise.all(closed)) expect(event.code).toBe(4404);
      for (const instance of [t, other]) {
        const answer = await eventually(async () => {
          const found = await instance.fetch("acme-gone", "/actions");
          return found.status === 404 ? found : null;
        });
        expect(await answer?.json()).toMatchObject({ ok: false, error: "environment_not_found" });
      }
      expect(composed()).not.toContain(id);
      await other.stop();
    });

    test("executions past retention are forgotten in an environment nobody asked for, their uploads' bytes too", async () => {
      const id = await t.create({ handle: "acme-old", organization: "acme" });
      const store = t.store.environment(id);
      const long = Date.now() - 3 * 3_600_000;
      const execution = {
        id: Bun.randomUUIDv7(),
        requestId: crypto.randomUUID(),
        principalKind: "service" as const,
        principalId: "service",
        action: "test.echo",
        kind: "function" as const,
        releaseVersion: "t1",
        contractHash: "h",
        inputFingerprint: "f",
        input: {},
        status: "succeeded" as const,
        output: null,
        errorCode: null,
        errorMessage: null,
        createdAt: long,
        startedAt: long,
        finishedAt: long,
        scheduledBy: null,
      };
      await store.executions.claim(execution);
      const path = `executions/${execution.id}/file/a.txt`;
      const bytes = join(t.dataDir, "files", "environments", String(id), path);
      mkdirSync(dirname(bytes), { recursive: true });
      writeFileSync(bytes, "old");
      await store.files.put({
        path,
        contentType: "text/plain",
        size: 3,
        sha256: null,
        ownerKind: "service",
        ownerId: "service",
        createdAt: long,
        updatedAt: long,
        executionId: execution.id,
        field: "file",
        filename: "a.txt",
      });
      const other = await t.another({ EXECUTION_RETENTION: "1h" });
      await eventually(async () => (await store.executions.get(execution.id)) === null);
      expect(existsSync(bytes)).toBe(false);
      expect(await store.files.get(path)).toBeNull();
      await other.stop();
    });
  });
}

for (const dialect of dialects) {
  describe(`hosting: an instance's loops leave other instances' environments alone (${dialect.name})`, () => {
    let t: HostingServer;
    beforeAll(async () => {
      t = await startHostingServer(dialect, {
        environments: [{ handle: "beta-one", organization: "beta", release: quietSchedules() }],
        env: { WORKFLOW_POLL_MS: "100", SERVE_ENVIRONMENTS: "main,acme-*" },
      });
    });
    afterAll(() => t.stop());

    test("due work of an environment SERVE_ENVIRONMENTS leaves out is not run here; an instance serving it runs it", async () => {
      const id = await t.id("beta-one");
      const invocations = t.store.environment(id).delayedInvocations;
      const now = Date.now();
      const row = {
        id: Bun.randomUUIDv7(),
        principalKind: "service" as const,
        principalId: "service",
        principalClaims: null,
        action: "sched.record",
        input: { note: "elsewhere" },
        requestId: crypto.randomUUID(),
        dueAt: now,
        scheduledBy: Bun.randomUUIDv7(),
        status: "pending" as const,
        executionId: null,
        leaseOwner: null,
        leaseExpiresAt: null,
        createdAt: now,
        updatedAt: now,
      };
      await invocations.insert([row]);
      const counts = t.server.serviceLoops?.counts;
      if (!counts) throw new Error("no service loops");
      const turns = counts.delayed.turns;
      await eventually(() => counts.delayed.turns >= turns + 3);
      expect((await invocations.get(row.id))?.status).toBe("pending");
      expect((t.server.environments as unknown as { ids(): number[] }).ids()).not.toContain(id);

      const serving = await t.another({ SERVE_ENVIRONMENTS: "org:beta" });
      await eventually(async () => (await invocations.get(row.id))?.status === "started", 10_000);
      await serving.stop();
    });
  });
}

// Found by the contract test (1 run in ~6 on PostgreSQL): an environment the schedule loop composed before the
// server listened kept no server, so its /session upgrades were refused 400. Several such environments make
// the race likely; each must upgrade.
for (const dialect of dialects) {
  test(`environments composed by the loops at start upgrade /session (${dialect.name})`, async () => {
    const handles = ["tick-1", "tick-2", "tick-3", "tick-4"];
    const t = await startHostingServer(dialect, {
      environments: handles.map((handle) => ({ handle, organization: "acme", release: ticking() })),
    });
    try {
      const environments = t.server.environments as unknown as { ids(): number[] };
      const ids = await Promise.all(handles.map((handle) => t.id(handle)));
      await eventually(() => ids.every((id) => environments.ids().includes(id)), 10_000);
      for (const handle of handles) {
        const client = await LiveClient.connect(t.at(handle));
        client.send({ op: "init", "access-token": t.serviceKey });
        expect((await client.op("init-ok")).op).toBe("init-ok");
        client.close();
      }
    } finally {
      await t.stop();
    }
  }, 30_000);
}
