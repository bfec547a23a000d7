import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import parsePrometheus from "parse-prometheus-text-format";
import { cli, type ServerProcess, serve } from "../support/cli.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";
import { eventually, fixture } from "../support/server.ts";

/**
 * Issue #43 item 4 with real processes: two `start` processes on one PostgreSQL database; the one holding
 * a workflow run and a function execution is killed (SIGKILL), and the survivor tells it: the takeover
 * in its log and /metrics, the interrupted execution by id, `GET /instances` without the dead one once
 * its heartbeat expired (docs/decisions/fleet.md).
 */
const pg = dialects.find((d) => d.name === "postgres");

const KEY = `fleet-key-${crypto.randomUUID()}`;
const WORKFLOW_LEASE_MS = 1_500;
/** Function executions held on the instance that is killed: past the 20 its sweep's log line names. */
const HELD = 22;
const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };

// biome-ignore lint/suspicious/noExplicitAny: tests read answers' JSON freely
type Json = any;

const invoke = (base: string, action: string, input: unknown) =>
  fetch(`${base}/actions/${action}/invoke`, {
    method: "POST",
    headers,
    body: JSON.stringify({ requestId: crypto.randomUUID(), input }),
  });

const get = async (base: string, path: string): Promise<Json> => (await fetch(`${base}${path}`, { headers })).json();

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The values of one scrape's metrics without labels, by name. */
async function scrape(base: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${base}/metrics`, { headers })).text();
  return new Map(parsePrometheus(text).map((family) => [family.name, Number(family.metrics[0]?.value)]));
}

/** The workflows fixture's actions with the instances fixture's held function, in one release. */
function composeRelease(root: string): string {
  for (const from of ["data", "workflows"]) cpSync(join(fixture(from), "release.ts"), join(root, from, "release.ts"));
  const dir = join(root, "fleet");
  cpSync(fixture("instances"), dir, { recursive: true });
  for (const from of ["basic", "workflows", "data"]) {
    cpSync(join(fixture(from), "actions"), join(dir, "actions"), { recursive: true });
  }
  for (const from of ["basic", "workflows"]) cpSync(join(fixture(from), "lib"), join(dir, "lib"), { recursive: true });
  return dir;
}

describe.skipIf(!pg)("the fleet seen by its survivor (postgres)", () => {
  let database: TestDatabase;
  let work: string;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "actuate-fleet-"));
    database = await (pg as (typeof dialects)[number]).create();
  });

  afterAll(async () => {
    await Promise.all(servers.map((s) => (s.proc.exitCode === null ? s.kill() : undefined)));
    await database?.drop();
    rmSync(work, { recursive: true, force: true });
  });

  test("a killed instance: its run taken over and logged, its execution's id swept, the fleet listed without it", async () => {
    const env = {
      DATABASE_URL: database.url,
      SERVICE_KEYS: KEY,
      HOST: "127.0.0.1",
      WORKFLOW_LEASE_MS: String(WORKFLOW_LEASE_MS),
      WORKFLOW_POLL_MS: "200",
      LOG_LEVEL: "info",
    };
    const dataDir = () => mkdtempSync(join(work, "data-"));
    const published = await cli(["release", "publish", composeRelease(work)], { ...env, DATA_DIR: dataDir() });
    expect(published.code).toBe(0);
    const started = await Promise.allSettled(
      [0, 1].map(() => serve(["start"], { ...env, DATA_DIR: dataDir() }, undefined, 45_000)),
    );
    for (const s of started) if (s.status === "fulfilled") servers.push(s.value);
    for (const s of started) if (s.status === "rejected") throw s.reason;
    const [a, b] = servers as [ServerProcess, ServerProcess];
    const idOf = async (s: ServerProcess) =>
      (await fetch(`${s.url}/healthz`)).headers.get("x-actuate-instance") as string;
    const [aId, bId] = [await idOf(a), await idOf(b)];
    expect(aId).not.toBe(bId);
    const listed = async () => ((await get(a.url, "/instances")).items as { id: string }[]).map((i) => i.id).sort();
    expect(await listed()).toEqual([aId, bId].sort());
    // `actuate instances` reads the same rows from the database.
    const local = await cli(["instances"], { DATABASE_URL: database.url });
    expect(local.code).toBe(0);
    for (const id of [aId, bId]) expect(local.stdout).toContain(id);

    // A run admitted on B, held there (its second step waits for a gate file).
    const gate = join(work, "gate");
    const admitted = await invoke(b.url, "wf.gated", { gate, log: join(work, "run-log") });
    expect(admitted.status).toBe(202);
    const { runId } = (await admitted.json()) as { runId: string };
    await eventually(async () => (await get(a.url, `/runs/${runId}`)).leaseHolder === bId, 15_000);
    // Function executions running on B, one more than the sweep's line names (each logs its id, then
    // waits for the gate too).
    const holdLog = join(work, "hold-log");
    const held = Array.from({ length: HELD }, () =>
      invoke(b.url, "hold.file", { gate, log: holdLog }).catch(() => null),
    );
    const heldIds = (await eventually(() => {
      const ids = existsSync(holdLog) ? readFileSync(holdLog, "utf8").trim().split("\n") : [];
      return ids.length === HELD && ids;
    }, 15_000)) as string[];
    const [executionId] = heldIds as [string];
    expect((await get(a.url, `/executions/${executionId}`)).instance).toBe(bId);

    const logFrom = a.output().length;
    b.proc.kill("SIGKILL");
    await b.proc.exited;
    await Promise.all(held);

    // The survivor names the run, the dead instance, and the execution it failed.
    await a.waitFor(
      new RegExp(`workflow run ${runId} taken over from instance ${escaped(bId)}`),
      WORKFLOW_LEASE_MS * 10,
      logFrom,
    );
    const swept = await a.waitFor(/\d+ execution\(s\) of a stopped server were marked failed[^"]*/, 15_000, logFrom);
    // One line: 20 ids named, the rest counted.
    expect(swept).toStartWith(`${HELD} execution(s)`);
    expect(heldIds.filter((id) => swept.includes(id))).toHaveLength(20);
    expect(swept).toEndWith(`and ${HELD - 20} more`);
    expect(await get(a.url, `/executions/${executionId}`)).toMatchObject({
      status: "failed",
      errorCode: "execution_interrupted",
      instance: bId,
    });
    expect((await get(a.url, `/runs/${runId}`)).leaseHolder).toBe(aId);

    // /metrics counts them; the dead one leaves the list (and the gauge) once its heartbeat expired.
    const metrics = await scrape(a.url);
    expect(metrics.get("actuate_workflow_takeovers_total")).toBe(1);
    expect(metrics.get("actuate_interrupted_executions_total")).toBe(HELD);
    await eventually(async () => (await listed()).length === 1, 15_000);
    expect(await listed()).toEqual([aId]);
    expect((await scrape(a.url)).get("actuate_instances_live")).toBe(1);
    const asked = await cli(["instances", "--url", a.url], { ACTUATE_TOKEN: KEY });
    expect(asked.code).toBe(0);
    expect(asked.stdout).toContain(`${aId} *`);
    expect(asked.stdout).not.toContain(bId);

    // The run goes on from its checkpoint on A.
    writeFileSync(gate, "");
    const run = await eventually(async () => {
      const found = await get(a.url, `/runs/${runId}`);
      return found.status === "succeeded" && found;
    }, 15_000);
    expect(run).toMatchObject({ leaseHolder: null, output: { done: true } });
  }, 120_000);
});
