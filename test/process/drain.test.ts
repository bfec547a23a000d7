import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ServerProcess, serve } from "../support/cli.ts";
import { freePort } from "../support/hosting.ts";
import { eventually, fixture, type TestResponse } from "../support/server.ts";

// Real `start` and `dev` processes stopped by signals, as an orchestrator stops them (docs/decisions/drain.md).

const KEY = "drain-key";
const dirs: string[] = [];
const servers: ServerProcess[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) if (server.proc.exitCode === null) server.proc.kill("SIGKILL");
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "actuate-drain-"));
  dirs.push(dir);
  return dir;
}

async function started(command: "start" | "dev", env: Record<string, string>): Promise<ServerProcess> {
  const server = await serve([command, "--release", fixture("drain")], {
    DATABASE_URL: "",
    SERVICE_KEYS: KEY,
    ...env,
  });
  servers.push(server);
  return server;
}

const invoke = (url: string, action: string, input: unknown): Promise<TestResponse> =>
  fetch(`${url}/actions/${action}/invoke`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ requestId: crypto.randomUUID(), input }),
  });

/** The process's exit code, or "running" if it has not exited within `ms` (a bound that proves the stop ends). */
const exitWithin = (server: ServerProcess, ms: number) =>
  Promise.race([server.proc.exited, Bun.sleep(ms).then(() => "running" as const)]);

interface Ready {
  status: number;
  retryAfter: string | null;
  body: Record<string, unknown>;
}

const modes = [
  { name: "single mode", env: (_port: number) => ({}), site: (server: ServerProcess) => server.url },
  {
    name: "hosting mode",
    env: (port: number) => ({ PORT: String(port), SERVICE_URL: `http://actuate.localhost:${port}`, HANDLE: "local" }),
    site: (server: ServerProcess) => `http://local.actuate.localhost:${new URL(server.url).port}`,
  },
];

describe.each(modes)("$name", (mode) => {
  test("SIGTERM: /readyz answers 503 draining while /healthz and invokes are still served, then the process exits 0", async () => {
    // Long enough that the requests below, made once the 503 is seen, land inside the phase on a loaded machine.
    const server = await started("start", { DATA_DIR: dataDir(), DRAIN_READY_MS: "8000", ...mode.env(freePort()) });
    const readyz = async (): Promise<Ready> => {
      const res: TestResponse = await fetch(`${server.url}/readyz`);
      return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() };
    };
    expect((await readyz()).status).toBe(200);

    server.proc.kill("SIGTERM");
    const draining = (await eventually(async () => {
      const answer = await readyz();
      return answer.status === 503 && answer;
    }, 10_000)) as Ready;
    expect(draining.body).toMatchObject({ ok: false, error: "draining" });
    expect(draining.body.message).toBeString();
    expect(draining.retryAfter).not.toBeNull();

    const [health, invoked] = await Promise.all([
      fetch(`${server.url}/healthz`),
      invoke(mode.site(server), "drain.echo", { text: "while draining" }),
    ]);
    expect(health.status).toBe(200);
    expect(invoked.status).toBe(200);
    expect(await invoked.json()).toMatchObject({
      execution: { status: "succeeded", output: { text: "while draining" } },
    });
    // Still listening, still draining: the requests above were served inside the phase, not after it.
    expect((await readyz()).body).toMatchObject({ error: "draining" });

    expect(await server.proc.exited).toBe(0);
    expect(server.output()).toContain("SIGTERM: draining");
  }, 60_000);
});

test("a handler ignoring ctx.signal does not hold the stop beyond DRAIN_READY_MS + DRAIN_MS + 1 s; its execution ends execution_interrupted", async () => {
  const env = { DATA_DIR: dataDir(), WAIT_MS: "100", DRAIN_READY_MS: "300", DRAIN_MS: "500" };
  const server = await started("start", env);
  const ids: Record<string, string> = {};
  for (const action of ["drain.ignores", "drain.heeds"]) {
    const res = await invoke(server.url, action, {});
    expect(res.status).toBe(202);
    ids[action] = (await res.json()).execution.id;
  }

  server.proc.kill("SIGTERM");
  // About 2 s here; before DRAIN_MS was a setting the stop took 10 s and more (5 s of drain, then 5 s of grace).
  expect(await exitWithin(server, 8_000)).toBe(0);

  // The next start fails what was left running, as docs/DEPLOY.md says.
  const again = await started("start", env);
  expect(again.output()).toContain("1 execution(s) left running by a stopped server were marked failed");
  const read = async (id = ""): Promise<unknown> =>
    (await fetch(`${again.url}/executions/${id}`, { headers: { authorization: `Bearer ${KEY}` } })).json();
  expect(await read(ids["drain.ignores"])).toMatchObject({ status: "failed", errorCode: "execution_interrupted" });
  // The one that heeded its signal stored how it ended within the grace.
  expect(await read(ids["drain.heeds"])).toMatchObject({
    status: "failed",
    errorCode: "action_failed",
    errorMessage: "the server is shutting down",
  });
  again.proc.kill("SIGTERM");
  expect(await again.proc.exited).toBe(0);
}, 60_000);

test("a second SIGTERM during the ready drain skips the rest of the wait", async () => {
  const server = await started("start", { DATA_DIR: dataDir(), DRAIN_READY_MS: "60000" });
  server.proc.kill("SIGTERM");
  await eventually(async () => (await fetch(`${server.url}/readyz`)).status === 503, 10_000);
  server.proc.kill("SIGTERM");
  expect(await exitWithin(server, 30_000)).toBe(0);
  expect(server.output()).toContain("SIGTERM again");
}, 60_000);

test("dev stops at once on SIGTERM: no ready drain, whatever DRAIN_READY_MS says", async () => {
  const server = await started("dev", { DATA_DIR: dataDir(), DRAIN_READY_MS: "60000" });
  await eventually(() => server.output().includes("watching"), 10_000);
  server.proc.kill("SIGTERM");
  expect(await exitWithin(server, 30_000)).toBe(0);
  expect(server.output()).not.toContain("draining");
}, 60_000);
