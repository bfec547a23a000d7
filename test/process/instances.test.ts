import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { cli, type ServerProcess, serve } from "../support/cli.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";
import { type Effect, effects } from "../support/effects.ts";
import { freePort, haproxyPath, type LoadBalancer, startHaproxy } from "../support/haproxy.ts";
import { LiveClient } from "../support/live-client.ts";
import { eventually, fixture } from "../support/server.ts";
import { s3 } from "../support/storages.ts";

/**
 * Three server processes (`bun src/cli/main.ts start`) on one PostgreSQL database and one S3 (s3rver),
 * behind HAProxy, behave as one service under a bounded mixed load (echo invokes and workflow runs
 * through the balancer, all the while), including when one is killed and one is stopped.
 */
const pg = dialects.find((d) => d.name === "postgres");

const KEY = `instances-key-${crypto.randomUUID()}`;
const RELEASE_POLL_MS = 250;
const WORKFLOW_LEASE_MS = 1_500;
const WAIT_MS = 10_000;
const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };

// biome-ignore lint/suspicious/noExplicitAny: tests read answers' JSON freely
type Json = any;

const invoke = (base: string, action: string, input: unknown, requestId: string = crypto.randomUUID()) =>
  fetch(`${base}/actions/${action}/invoke`, { method: "POST", headers, body: JSON.stringify({ requestId, input }) });

const get = async (base: string, path: string): Promise<{ status: number; body: Json }> => {
  const response = await fetch(`${base}${path}`, { headers });
  return { status: response.status, body: await response.json() };
};

/**
 * One release holding basic's, workflows' and data's actions beside the instances fixture (see its
 * release.ts, which reads the schemas of ../data and ../workflows: they are copied beside it too).
 */
function composeRelease(root: string, version: string): string {
  for (const from of ["data", "workflows"]) cpSync(join(fixture(from), "release.ts"), join(root, from, "release.ts"));
  const dir = join(root, version);
  cpSync(fixture("instances"), dir, { recursive: true });
  for (const from of ["basic", "workflows", "data"]) {
    cpSync(join(fixture(from), "actions"), join(dir, "actions"), { recursive: true });
  }
  for (const from of ["basic", "workflows"]) cpSync(join(fixture(from), "lib"), join(dir, "lib"), { recursive: true });
  const release = join(dir, "release.ts");
  writeFileSync(release, readFileSync(release, "utf8").replace('version: "i1"', `version: "${version}"`));
  return dir;
}

interface Answer {
  status: number;
  kind?: string;
  /** An error answer's code (or the balancer's page, which is not JSON). */
  error?: string;
  /** The execution as answered (id, status, output). */
  execution?: { id: string; status: string; output?: unknown };
}

/** Echo invokes and workflow admissions through the balancer by a few clients, until stopped (or a bound). */
function startLoad(base: string, clients = 3, bound = 3_000) {
  const answers: Answer[] = [];
  let running = true;
  const client = async (c: number) => {
    for (let i = 0; running && answers.length < bound; i++) {
      const workflow = i % 4 === 3;
      const response = await (workflow
        ? invoke(base, "wf.steps", { n: i })
        : invoke(base, "test.echo", { text: `client ${c} call ${i}` })
      ).catch(() => null);
      if (!response) {
        answers.push({ status: 0 });
        continue;
      }
      const text = await response.text();
      const body = (() => {
        try {
          return JSON.parse(text) as Json;
        } catch {
          return { error: text.slice(0, 200) };
        }
      })();
      answers.push({ status: response.status, kind: body.kind, error: body.error, execution: body.execution });
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

describe.skipIf(!pg || !haproxyPath)("three instances behind HAProxy (postgres, s3)", () => {
  let database: TestDatabase;
  let sql: postgres.Sql;
  const dirs: string[] = [];
  const servers: ServerProcess[] = [];
  let lb: LoadBalancer;
  let load: ReturnType<typeof startLoad>;
  let a: ServerProcess;
  let b: ServerProcess;
  let c: ServerProcess;
  let work: string;
  const file = (name: string) => join(work, `${name}-${crypto.randomUUID()}`);

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "actuate-instances-"));
    database = await (pg as (typeof dialects)[number]).create();
    sql = postgres(database.url, { max: 1, onnotice: () => {} });
    const lbPort = freePort();
    const shared = {
      DATABASE_URL: database.url,
      SERVICE_KEYS: KEY,
      HOST: "127.0.0.1",
      PUBLIC_URL: `http://127.0.0.1:${lbPort}`,
      WAIT_MS: String(WAIT_MS),
      RELEASE_POLL_MS: String(RELEASE_POLL_MS),
      WORKFLOW_LEASE_MS: String(WORKFLOW_LEASE_MS),
      WORKFLOW_POLL_MS: "200",
      ...(await s3.env()),
    };
    const dataDir = () => {
      const dir = mkdtempSync(join(tmpdir(), "actuate-instance-"));
      dirs.push(dir);
      return dir;
    };
    const releases = mkdtempSync(join(tmpdir(), "actuate-releases-"));
    dirs.push(releases);
    const [i1, i2] = [composeRelease(releases, "i1"), composeRelease(releases, "i2")];
    // i2 is stored first, then i1 is published over it: i1 is active, i2 waits for `release activate`.
    for (const dir of [i2, i1]) {
      const published = await cli(["release", "publish", dir], { ...shared, DATA_DIR: dataDir() });
      expect(published.code).toBe(0);
    }
    // Together, as a deployment would; a cold start on a loaded two-core machine can take a while.
    const starting = await Promise.allSettled(
      [0, 1, 2].map(() => serve(["start"], { ...shared, DATA_DIR: dataDir() }, undefined, 45_000)),
    );
    for (const started of starting) if (started.status === "fulfilled") servers.push(started.value);
    for (const started of starting) if (started.status === "rejected") throw started.reason;
    [a, b, c] = servers as [ServerProcess, ServerProcess, ServerProcess];
    lb = await startHaproxy(
      lbPort,
      servers.map((s) => s.url.replace("http://", "")),
    );
    load = startLoad(lb.url);
  }, 90_000);

  afterAll(async () => {
    await load?.stop();
    await lb?.stop();
    await Promise.all(servers.map((s) => (s.proc.exitCode === null ? s.kill() : undefined)));
    await sql?.end();
    await database?.drop();
    await s3.release();
    for (const dir of [...dirs, work]) rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  test("one requestId sent to every instance (and twice through the balancer) makes one execution", async () => {
    const requestIds = Array.from({ length: 8 }, () => crypto.randomUUID());
    const answers = await Promise.all(
      requestIds.flatMap((requestId) =>
        [a.url, b.url, c.url, lb.url, lb.url].map(async (base) => {
          const response = await invoke(base, "test.echo", { text: requestId }, requestId);
          expect(response.status).toBe(200);
          return { requestId, execution: ((await response.json()) as Json).execution };
        }),
      ),
    );
    for (const requestId of requestIds) {
      const executions = answers.filter((x) => x.requestId === requestId).map((x) => x.execution);
      expect(new Set(executions.map((x) => x.id)).size).toBe(1);
      expect(executions.every((x) => x.status === "succeeded" && x.output.text === requestId)).toBe(true);
    }
    const stored = await sql`select id from executions where request_id = any(${requestIds})`;
    expect(stored.length).toBe(requestIds.length);
  }, 30_000);

  test("a live query on one instance refreshes after a write through another", async () => {
    const client = await LiveClient.connect(a.url);
    try {
      client.send({ op: "init", "access-token": KEY });
      await client.op("init-ok");
      const title = `note ${crypto.randomUUID()}`;
      client.send({ op: "add-query", q: { notes: { $: { where: { title } } } }, "return-type": "tree" });
      expect((await client.op("add-query-ok")).result.notes).toEqual([]);
      const written = (await (await invoke(b.url, "data.add-note", { title, priority: 1 })).json()) as Json;
      expect(written.execution.status).toBe("succeeded");
      const refresh = await client.next((m) => m.op === "refresh-ok", 10_000);
      expect(refresh.computations[0]["instaql-result"].notes.map((n: { id: string }) => n.id)).toEqual([
        written.execution.output.id,
      ]);
    } finally {
      client.close();
    }
  }, 30_000);

  test("subscribe-stream and /result on one instance follow a run executing on another", async () => {
    const [gate, log] = [file("gate"), file("log")];
    const admitted = await invoke(c.url, "wf.gated", { gate, log });
    expect(admitted.status).toBe(202);
    const { runId } = (await admitted.json()) as Json;
    const client = await LiveClient.connect(a.url);
    try {
      client.send({ op: "init", "access-token": KEY });
      await client.op("init-ok");
      client.send({ op: "subscribe-stream", "execution-id": runId });
      expect(await client.op("stream-append")).toMatchObject({ "execution-id": runId, done: false });
      await eventually(() => effects(log).some((e) => e.step === "wait" && e.phase === "start"), 10_000);
      const result = get(a.url, `/executions/${runId}/result`);
      writeFileSync(gate, "");
      const end = await client.next((m) => m.op === "stream-append" && m.done === true, 10_000);
      expect(end).toMatchObject({ "execution-id": runId, status: "succeeded" });
      expect(await result).toMatchObject({ status: 200, body: { id: runId, status: "succeeded" } });
      // It ran on C (admitted there with C's lease), and A followed it.
      expect(new Set(effects(log).map((e) => e.pid))).toEqual(new Set([c.proc.pid]));
    } finally {
      client.close();
    }
  }, 30_000);

  test("activating a release is seen by all three within RELEASE_POLL_MS", async () => {
    const activated = await cli(["release", "activate", "i2"], { DATABASE_URL: database.url, DATA_DIR: work });
    expect(activated.code).toBe(0);
    const since = Date.now();
    const serves = async (base: string) => {
      await eventually(async () => {
        const response = await invoke(base, "test.echo", { text: "which release?" });
        return ((await response.json()) as Json).execution?.releaseVersion === "i2";
      }, 10_000);
      return Date.now() - since;
    };
    const delays = await Promise.all(servers.map((s) => serves(s.url)));
    // The poll interval, plus loading the release and answering on a loaded two-core machine.
    for (const delay of delays) expect(delay).toBeLessThan(RELEASE_POLL_MS + 2_000);
  }, 30_000);

  test("SIGKILL of one instance mid-load: no execution answered 200 is lost, its runs finish on the others", async () => {
    const held = Array.from({ length: 3 }, () => ({ gate: file("gate"), log: file("log") }));
    const runIds = await Promise.all(
      held.map(async (input) => {
        const admitted = await invoke(c.url, "wf.gated", input);
        expect(admitted.status).toBe(202);
        return ((await admitted.json()) as Json).runId as string;
      }),
    );
    const started = (log: string) => effects(log).some((e) => e.step === "wait" && e.phase === "start");
    await eventually(() => held.every(({ log }) => started(log)), 10_000);
    const answeredBefore = load.answers.length;
    c.proc.kill("SIGKILL");
    await c.proc.exited;
    for (const { gate } of held) writeFileSync(gate, "");
    const results = await Promise.all(runIds.map((id) => get(lb.url, `/executions/${id}/result`)));
    for (const [i, result] of results.entries()) {
      expect(result).toMatchObject({ status: 200, body: { id: runIds[i], status: "succeeded" } });
      const last = effects(held[i]?.log as string).find((e: Effect) => e.step === "last");
      expect([a.proc.pid, b.proc.pid]).toContain(last?.pid as number);
    }
    // The balancer kept serving on the two left.
    await eventually(() => load.answers.slice(answeredBefore).filter((x) => x.status === 200).length >= 10, 20_000);
  }, 45_000);

  test("SIGTERM drains: no new connections, the request in flight is answered, leases are let go", async () => {
    const hold = { gate: file("gate"), log: file("log") };
    const inFlight = invoke(b.url, "hold.file", hold);
    const run = { gate: file("gate"), log: file("log") };
    const admitted = await invoke(b.url, "wf.gated", run);
    const { runId } = (await admitted.json()) as Json;
    await eventually(() => {
      let holding = "";
      try {
        holding = readFileSync(hold.log, "utf8");
      } catch {}
      return holding !== "" && effects(run.log).some((e) => e.step === "wait" && e.phase === "start");
    }, 10_000);
    const since = Date.now();
    b.proc.kill("SIGTERM");
    await eventually(
      () =>
        fetch(`${b.url}/healthz`).then(
          () => false,
          () => true,
        ),
      5_000,
    );
    expect(b.proc.exitCode).toBeNull();
    writeFileSync(hold.gate, "");
    const answered = await inFlight;
    expect(answered.status).toBe(200);
    expect(((await answered.json()) as Json).execution).toMatchObject({ status: "succeeded", output: { held: true } });
    expect(await b.proc.exited).toBe(0);
    expect(Date.now() - since).toBeLessThan(10_000);
    // The run's lease was let go (or already taken over), not left to expire.
    const [row] = await sql`select lease_owner from workflow_runs where id = ${runId}`;
    expect(String(row?.lease_owner)).not.toContain(`:${b.proc.pid}:`);
    expect(effects(run.log).some((e) => e.step === "wait" && e.phase === "aborted" && e.pid === b.proc.pid)).toBe(true);
    writeFileSync(run.gate, "");
    expect(await get(lb.url, `/executions/${runId}/result`)).toMatchObject({
      status: 200,
      body: { status: "succeeded" },
    });
  }, 30_000);

  test("every execution the load saw answered 200 is stored as answered", async () => {
    const answers = await load.stop();
    // Nothing reached a client as an error: the balancer sent again what a dying instance dropped.
    expect(answers.filter((x) => x.status !== 200 && x.status !== 202)).toEqual([]);
    const settled = answers.flatMap((x) => (x.status === 200 && x.execution ? [x.execution] : []));
    expect(settled.filter((x) => x.status === "succeeded").length).toBeGreaterThan(20);
    const stored = await sql`select id, status, output from executions where id = any(${settled.map((x) => x.id)})`;
    const byId = new Map(stored.map((row) => [row.id as string, row]));
    for (const execution of settled) {
      // A view shows `output` only when the execution succeeded.
      expect(byId.get(execution.id)).toMatchObject({ status: execution.status, output: execution.output ?? null });
    }
    const admitted = answers.flatMap((x) =>
      x.status === 202 && x.kind === "workflow" && x.execution ? [x.execution.id] : [],
    );
    expect(admitted.length).toBeGreaterThan(5);
    // Every run admitted ends, whichever instance admitted it and whatever happened to that instance.
    await eventually(async () => {
      const open = await sql`select id from workflow_runs where id = any(${admitted}) and status <> 'succeeded'`;
      return open.length === 0;
    }, 20_000);
  }, 45_000);
});
