import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ServerProcess, serve } from "../support/cli.ts";
import { type Dialect, dialects } from "../support/databases.ts";
import { effects } from "../support/effects.ts";
import { eventually, fixture } from "../support/server.ts";

// Workflows across real server processes: one killed mid-run, two sharing a PostgreSQL database.

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A fresh database and data folder, and a way to start servers on them; all removed after the test. */
async function environment(dialect: Dialect, settings: Record<string, string>) {
  const database = await dialect.create();
  const dir = mkdtempSync(join(tmpdir(), "actuate-wf-proc-"));
  const key = `test-key-${crypto.randomUUID()}`;
  const servers: ServerProcess[] = [];
  cleanups.push(async () => {
    for (const server of servers) if (server.proc.exitCode === null) server.proc.kill("SIGKILL");
    await Promise.all(servers.map((server) => server.proc.exited));
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  const env = { DATABASE_URL: database.url, SERVICE_KEYS: key, ...settings };
  return {
    file: (name: string) => join(dir, name),
    /** Each instance has its own data folder, as deployed instances do; a restart reuses its instance's. */
    async start(instance = "a") {
      const server = await serve(["start", "--release", fixture("workflows")], {
        ...env,
        DATA_DIR: join(dir, `data-${instance}`),
      });
      servers.push(server);
      return server;
    },
    call: (server: ServerProcess, path: string, init: RequestInit = {}) =>
      fetch(`${server.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      }),
  };
}

for (const dialect of dialects) {
  test(`a run whose server is SIGKILLed mid-step completes on the next server; no finished step runs again (${dialect.name})`, async () => {
    const env = await environment(dialect, { WORKFLOW_LEASE_MS: "1000", WORKFLOW_POLL_MS: "100" });
    const log = env.file("effects");
    const gate = env.file("gate");
    const first = await env.start();
    const invoked = await env.call(first, "/actions/wf.gated/invoke", {
      method: "POST",
      body: JSON.stringify({ requestId: crypto.randomUUID(), input: { gate, log } }),
    });
    expect(invoked.status).toBe(202);
    const { runId } = (await invoked.json()) as { runId: string };
    await eventually(() => effects(log).some((e) => e.step === "wait"), 10_000);
    // The attempt's start is recorded without holding the step up; once it is, the crash counts it.
    await eventually(async () => {
      const run = (await (await env.call(first, `/runs/${runId}`)).json()) as { steps: { status: string }[] };
      return run.steps[1]?.status === "running";
    }, 10_000);

    first.proc.kill("SIGKILL");
    await first.proc.exited;
    writeFileSync(gate, "");
    const second = await env.start();
    const view = await eventually(async () => {
      const run = (await (await env.call(second, `/runs/${runId}`)).json()) as { status: string };
      return run.status === "succeeded" ? run : null;
    }, 15_000);

    const seen = effects(log).map((e) => ({ what: `${e.step}${e.phase ? `:${e.phase}` : ""}`, pid: e.pid }));
    // The step that finished before the kill never ran again; the interrupted one ran again, to its end.
    expect(seen.filter((e) => e.what === "first")).toEqual([{ what: "first", pid: first.proc.pid }]);
    expect(seen.filter((e) => e.what === "wait:start").map((e) => e.pid)).toEqual([first.proc.pid, second.proc.pid]);
    expect(seen.filter((e) => e.what === "wait:end")).toEqual([{ what: "wait:end", pid: second.proc.pid }]);
    expect(seen.filter((e) => e.what === "last")).toEqual([{ what: "last", pid: second.proc.pid }]);
    expect(view).toMatchObject({
      status: "succeeded",
      steps: [
        { name: "first", status: "succeeded", attempts: 1 },
        { name: "wait", status: "succeeded", attempts: 2 },
        { name: "last", status: "succeeded", attempts: 1 },
      ],
    });
    const execution = (await (await env.call(second, `/executions/${runId}`)).json()) as { status: string };
    expect(execution.status).toBe("succeeded");
  }, 40_000);
}

const postgres = dialects.find((d) => d.name === "postgres");

describe.skipIf(!postgres)("two server processes on one PostgreSQL database", () => {
  test("a step longer than the lease keeps its run (heartbeat); a cancel through the other instance reaches it", async () => {
    const env = await environment(postgres as Dialect, { WORKFLOW_LEASE_MS: "1000", WORKFLOW_POLL_MS: "50" });
    const log = env.file("effects");
    const [a, b] = [await env.start("a"), await env.start("b")];
    const invoked = await env.call(a, "/actions/wf.gated/invoke", {
      method: "POST",
      body: JSON.stringify({ requestId: crypto.randomUUID(), input: { gate: env.file("gate"), log } }),
    });
    const { runId } = (await invoked.json()) as { runId: string };
    await eventually(() => effects(log).some((e) => e.step === "wait"), 10_000);
    // Three leases long: without renewals, the other instance (polling every 50 ms) would take the run over.
    await Bun.sleep(3_000);
    expect(
      effects(log)
        .filter((e) => e.step === "wait")
        .map((e) => e.pid),
    ).toEqual([a.proc.pid]);

    const canceled = await env.call(b, `/runs/${runId}/cancel`, { method: "POST" });
    expect(canceled.status).toBe(200);
    const view = await eventually(async () => {
      const run = (await (await env.call(b, `/runs/${runId}`)).json()) as { status: string };
      return run.status === "canceled" ? run : null;
    }, 10_000);
    expect(view).toMatchObject({ status: "canceled", errorCode: "run_canceled" });
    // The holder learned of it at its next heartbeat and aborted the step's signal.
    expect(effects(log).map((e) => `${e.step}${e.phase ? `:${e.phase}` : ""}@${e.pid}`)).toEqual([
      `first@${a.proc.pid}`,
      `wait:start@${a.proc.pid}`,
      `wait:aborted@${a.proc.pid}`,
    ]);
  }, 40_000);

  test("share 50 runs: every run completes, every step runs once, in one process", async () => {
    const env = await environment(postgres as Dialect, {
      WORKFLOW_CONCURRENCY: "4",
      WORKFLOW_LEASE_MS: "5000",
      WORKFLOW_POLL_MS: "50",
    });
    const log = env.file("effects");
    const [a, b] = [await env.start("a"), await env.start("b")];
    // All are admitted through one server: it starts 4 at once, the others wait for either server's workers.
    const runIds = await Promise.all(
      Array.from({ length: 50 }, async (_, n) => {
        const res = await env.call(a, "/actions/wf.steps/invoke", {
          method: "POST",
          body: JSON.stringify({ requestId: crypto.randomUUID(), input: { n, log } }),
        });
        expect(res.status).toBe(202);
        return ((await res.json()) as { runId: string }).runId;
      }),
    );
    for (const runId of runIds) {
      const result = await env.call(b, `/executions/${runId}/result`);
      expect(((await result.json()) as { status: string }).status).toBe("succeeded");
    }
    const all = effects(log);
    for (const runId of runIds) {
      const ran = all.filter((e) => e.run === runId);
      expect(ran.map((e) => e.step)).toEqual(["one", "two", "three"]);
      // A run moves between processes only through its lease; here none expired, so one process ran it all.
      expect(new Set(ran.map((e) => e.pid)).size).toBe(1);
    }
    expect(new Set(all.map((e) => e.pid))).toEqual(new Set([a.proc.pid, b.proc.pid]));
  }, 60_000);
});
