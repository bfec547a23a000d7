import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cli, repoRoot, type ServerProcess, serve } from "../support/cli.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";
import { freePort, haproxyPath, type LoadBalancer, runHaproxy } from "../support/haproxy.ts";
import { LiveClient } from "../support/live-client.ts";
import { nginxPath, runNginx } from "../support/nginx.ts";
import { eventually, fixture } from "../support/server.ts";
import { s3 } from "../support/storages.ts";

/**
 * A rolling restart of three `start` instances (one PostgreSQL database, one s3rver) behind the balancers
 * as deploy/ configures them (deploy/haproxy/instances.cfg, deploy/nginx/instances.conf; only their port,
 * their servers' addresses and HAProxy's check interval are replaced, and a header naming the instance
 * that answered is added): while clients send invokes (each with its requestId) and reads through the
 * balancer, each instance in turn gets SIGTERM and is started again, on its port and data folder. No
 * request may fail.
 */
const pg = dialects.find((d) => d.name === "postgres");
const KEY = `rolling-restart-key-${crypto.randomUUID()}`;
const HAPROXY = join(repoRoot, "deploy", "haproxy", "instances.cfg");
const NGINX = join(repoRoot, "deploy", "nginx", "instances.conf");
/** HAProxy's check interval here (the shipped one is 1 s): fall 2 takes an instance out within ~0.4 s. */
const CHECK_INTER_MS = 200;
/**
 * The ready-drain the instances run with: /readyz 503 this long after SIGTERM, while they still serve. Above
 * inter × fall + `timeout check` (2 s) of the configuration, so a check slowed by the loaded machine
 * still sees it.
 */
const DRAIN_READY_MS = 3_000;
const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };

// biome-ignore lint/suspicious/noExplicitAny: tests read answers' JSON freely
type Json = any;

/**
 * Whether `start` has the ready-drain (issue #43): a throwaway instance is sent SIGTERM and asked /readyz,
 * which answers 503 `draining` with it, and nothing (the listener closed) without it.
 */
async function hasReadyDrain(): Promise<boolean> {
  const dir = mkdtempSync(join(tmpdir(), "actuate-drain-probe-"));
  const server = await serve(["start"], { DATA_DIR: dir, DRAIN_READY_MS: "5000" }, undefined, 45_000);
  try {
    server.proc.kill("SIGTERM");
    return await eventually(async () => {
      const response = await fetch(`${server.url}/readyz`).catch(() => null);
      if (!response) return "closed";
      if (response.status !== 503) return false;
      return ((await response.json()) as Json).error === "draining" ? "draining" : false;
    }, 10_000).then((seen) => seen === "draining");
  } finally {
    server.proc.kill("SIGKILL");
    await server.proc.exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

const drainAvailable = Boolean(pg && haproxyPath) && (await hasReadyDrain());

/** Replaces `from` in `text`, which must hold it exactly once: the shipped file and the test move together. */
function replaceOnce(text: string, from: string | RegExp, to: string, file: string): string {
  const count = typeof from === "string" ? text.split(from).length - 1 : (text.match(from) ?? []).length;
  if (count !== 1) throw new Error(`${file} should hold ${from} once, holds it ${count} times`);
  return text.replace(from, to);
}

/** deploy/haproxy/instances.cfg with this test's port, instances and check interval (and `retries` given). */
function haproxyConfig(port: number, addresses: string[], retries: number): string {
  let config = readFileSync(HAPROXY, "utf8");
  config = replaceOnce(config, /^ {2}bind :80$/m, `  bind 127.0.0.1:${port}`, HAPROXY);
  config = replaceOnce(config, / inter 1s /, ` inter ${CHECK_INTER_MS} `, HAPROXY);
  config = replaceOnce(config, /^ {2}retries 3$/m, `  retries ${retries}`, HAPROXY);
  const servers = [...config.matchAll(/^ {2}server \S+ \S+$/gm)];
  expect(servers.length).toBe(addresses.length);
  let i = 0;
  config = config.replace(/^ {2}server (\S+) \S+$/gm, (_, name: string) => `  server ${name} ${addresses[i++]}`);
  return replaceOnce(
    config,
    /^backend instances$/m,
    "backend instances\n  http-response set-header x-served-by %si:%sp",
    HAPROXY,
  );
}

/** deploy/nginx/instances.conf with this test's port and instances. */
function nginxConfig(port: number, addresses: string[]): string {
  let config = readFileSync(NGINX, "utf8");
  config = replaceOnce(
    config,
    /^ {2}listen 80;$/m,
    `  listen 127.0.0.1:${port};\n  add_header x-served-by $upstream_addr always;`,
    NGINX,
  );
  const servers = [...config.matchAll(/^ {2}server \S+:\d+ /gm)];
  expect(servers.length).toBe(addresses.length);
  let i = 0;
  return config.replace(/^ {2}server \S+:\d+ /gm, () => `  server ${addresses[i++]} `);
}

interface Answer {
  what: "invoke" | "read";
  status: number;
  /** The instance that answered (host:port; after retries, the last one tried), or the error. */
  servedBy: string;
  body: Json;
}

/**
 * Clients sending, until stopped, an echo invoke with a fresh requestId, then a read of the execution it
 * answered, through `base`. A request that fails is recorded as answered, status 0 when nothing answered.
 */
function startLoad(base: string, clients = 3) {
  const answers: Answer[] = [];
  let running = true;
  const send = async (what: Answer["what"], request: Promise<Response>): Promise<Answer> => {
    const answer = await request.then(
      async (response): Promise<Answer> => {
        const text = await response.text();
        const servedBy = (response.headers.get("x-served-by") ?? "").split(", ").at(-1) as string;
        try {
          return { what, status: response.status, servedBy, body: JSON.parse(text) };
        } catch {
          return { what, status: response.status, servedBy, body: text.slice(0, 300) };
        }
      },
      (error: Error): Answer => ({ what, status: 0, servedBy: "", body: String(error) }),
    );
    answers.push(answer);
    return answer;
  };
  const client = async (c: number) => {
    for (let i = 0; running; i++) {
      const invoked = await send(
        "invoke",
        fetch(`${base}/actions/test.echo/invoke`, {
          method: "POST",
          headers,
          body: JSON.stringify({ requestId: crypto.randomUUID(), input: { text: `client ${c} call ${i}` } }),
        }),
      );
      const id = invoked.body?.execution?.id;
      if (id) await send("read", fetch(`${base}/executions/${id}`, { headers }));
    }
  };
  const done = Promise.all(Array.from({ length: clients }, (_, c) => client(c)));
  return {
    answers,
    async stop() {
      running = false;
      await done;
      return answers;
    },
  };
}

describe.skipIf(!pg || !(haproxyPath || nginxPath))(
  "a rolling restart behind the balancers of deploy/ (postgres, s3)",
  () => {
    let database: TestDatabase;
    const dirs: string[] = [];
    const ports = [freePort(), freePort(), freePort()];
    const addresses = ports.map((port) => `127.0.0.1:${port}`);
    const instances: ServerProcess[] = [];
    let env: Record<string, string>;

    const startInstance = (i: number) =>
      serve(["start"], { ...env, PORT: String(ports[i]), DATA_DIR: dirs[i] as string }, undefined, 45_000);

    /**
     * SIGTERM to each instance in turn, which must exit 0; started again on its port and data folder; the next
     * one only once the balancer sends the load to the restarted one again.
     */
    async function rollingRestart(load: ReturnType<typeof startLoad>) {
      for (const i of [0, 1, 2]) {
        const stopped = instances[i] as ServerProcess;
        stopped.proc.kill("SIGTERM");
        expect(await stopped.proc.exited).toBe(0);
        instances[i] = await startInstance(i);
        const since = load.answers.length;
        await eventually(() => load.answers.slice(since).some((a) => a.servedBy === addresses[i]), 30_000);
      }
    }

    /** A restart under load through `balancer`: every request answered 200, on every instance, each as sent. */
    async function restartUnderLoad(balancer: LoadBalancer) {
      const load = startLoad(balancer.url);
      try {
        // /session upgrades through the balancer.
        const live = await LiveClient.connect(balancer.url);
        live.send({ op: "init", "access-token": KEY });
        await live.op("init-ok");
        live.close();
        await eventually(() => load.answers.length >= 30, 20_000);
        await rollingRestart(load);
        const since = load.answers.length;
        await eventually(() => load.answers.length >= since + 30, 20_000);
      } finally {
        await load.stop();
        await balancer.stop();
      }
      const failed = load.answers.filter((a) => a.status !== 200);
      expect(failed).toEqual([]);
      expect(new Set(load.answers.map((a) => a.servedBy))).toEqual(new Set(addresses));
      for (const answer of load.answers) {
        const expected = answer.what === "invoke" ? { execution: { status: "succeeded" } } : { status: "succeeded" };
        expect(answer.body).toMatchObject(expected);
      }
    }

    beforeAll(async () => {
      database = await (pg as (typeof dialects)[number]).create();
      for (const _ of ports) dirs.push(mkdtempSync(join(tmpdir(), "actuate-instance-")));
      env = {
        DATABASE_URL: database.url,
        SERVICE_KEYS: KEY,
        HOST: "127.0.0.1",
        WAIT_MS: "10000",
        DRAIN_READY_MS: String(DRAIN_READY_MS),
        ...(await s3.env()),
      };
      const published = await cli(["release", "publish", fixture("basic")], { ...env, DATA_DIR: dirs[0] as string });
      expect(published.code).toBe(0);
      // Together, as a deployment would; a cold start on a loaded two-core machine can take a while.
      instances.push(...(await Promise.all([0, 1, 2].map(startInstance))));
    }, 120_000);

    afterAll(async () => {
      await Promise.all(instances.map((s) => (s.proc.exitCode === null ? s.kill() : undefined)));
      await database?.drop();
      await s3.release();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    }, 60_000);

    test.skipIf(!nginxPath)(
      "nginx (passive checks, next upstream on error): 0 failed requests",
      async () => {
        const port = freePort();
        await restartUnderLoad(await runNginx(nginxConfig(port, addresses), `http://127.0.0.1:${port}`));
      },
      180_000,
    );

    test.skipIf(!haproxyPath)(
      "HAProxy (checks on /readyz, retries on another server): 0 failed requests",
      async () => {
        const port = freePort();
        await restartUnderLoad(await runHaproxy(haproxyConfig(port, addresses, 3), `http://127.0.0.1:${port}`));
      },
      180_000,
    );

    // Needs the ready-drain of `start` (issue #43 item 2, branch h/i43-drain): without it a stopping instance
    // closes its listener at once, and with no retry the requests sent to it before the checks see it down
    // fail. Skipped where `start` lacks it (hasReadyDrain), so it runs for real once the drain is in.
    test.skipIf(!drainAvailable)(
      "HAProxy with retries 0: 0 failed requests, thanks to the drain (/readyz 503 while still serving)",
      async () => {
        const port = freePort();
        await restartUnderLoad(await runHaproxy(haproxyConfig(port, addresses, 0), `http://127.0.0.1:${port}`));
      },
      180_000,
    );
  },
);
