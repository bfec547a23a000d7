import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashSecret } from "../../src/auth/tokens.ts";
import { cli, type ServerProcess, serve } from "../support/cli.ts";
import { canMakeClusters, privateCluster } from "../support/cluster.ts";
import { executeStatements } from "../support/databases.ts";
import { LiveClient } from "../support/live-client.ts";
import { signedInClient } from "../support/oauth-client.ts";
import { eventually, fixture } from "../support/server.ts";

type Line = { level: string; msg: string } & Record<string, unknown>;

/** The server's JSON log lines in `text` (what else it printed is left out). */
const logLines = (text: string): Line[] =>
  text.split("\n").flatMap((line) => {
    try {
      const parsed = JSON.parse(line);
      return typeof parsed?.msg === "string" ? [parsed as Line] : [];
    } catch {
      return [];
    }
  });

/** The background loops a server runs, as they name themselves in the log when the database goes and comes back. */
const LOOPS = [
  "checking live sessions' tokens",
  "following executions",
  "loading the active release",
  "workflow worker",
  "instance heartbeat",
  "schedule ticks",
  "delayed invocations",
  "execution retention",
];
const down = (loop: string) => `${loop}: the database cannot be reached; trying again until it is back`;
const back = (loop: string) => `${loop}: the database is back`;

/** Retention sweeps every tenth of EXECUTION_RETENTION (6 s here): the longest period of the loops in this test. */
const LONGEST_PERIOD_MS = 6_000;

test.skipIf(!canMakeClusters)(
  "every background loop survives a PostgreSQL outage, says so once when it begins and once when it ends, and resumes: sockets of each credential kind stay open, workflows asleep finish, schedules tick again",
  async () => {
    const cluster = privateCluster();
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-outage-loops-"));
    const key = `outage-key-${crypto.randomUUID()}`;
    const env = {
      DATABASE_URL: cluster.url,
      DATA_DIR: dataDir,
      SERVICE_KEYS: key,
      // A run let go when the database failed under it is resumed once its lease runs out.
      WORKFLOW_LEASE_MS: "6000",
      EXECUTION_RETENTION: "60s",
    };
    let server: ServerProcess | undefined;
    const sockets: LiveClient[] = [];
    try {
      const lastLine = async (args: string[]) => (await cli(args, env)).stdout.trim().split("\n").at(-1) ?? "";
      const rita = await lastLine(["token", "create", "--user", "rita"]);
      const sam = await lastLine(["token", "create", "--user", "sam"]);
      const password = await lastLine(["user", "add", "alice"]);
      server = await serve(["start", "--release", fixture("outage")], env);
      const base = server.url;
      const jwt = (await signedInClient(base, "alice", password)).saved?.access_token as string;
      const call = async (path: string, init: RequestInit & { token?: string } = {}) => {
        const headers = new Headers(init.headers);
        headers.set("authorization", `Bearer ${init.token ?? key}`);
        if (init.body !== undefined) headers.set("content-type", "application/json");
        const response = await fetch(`${base}${path}`, { ...init, headers });
        // biome-ignore lint/suspicious/noExplicitAny: the test reads the answers' fields freely
        return { status: response.status, body: (await response.json()) as Record<string, any> };
      };
      const invoke = (action: string, input: unknown, token = key) =>
        call(`/actions/${action}/invoke`, {
          method: "POST",
          body: JSON.stringify({ requestId: crypto.randomUUID(), input }),
          token,
        });

      // A socket of each credential kind, each with a live query of the marks the workflows write.
      const open = async (token: string) => {
        const socket = await LiveClient.connect(base);
        sockets.push(socket);
        socket.send({ op: "init", "access-token": token });
        await socket.op("init-ok");
        socket.send({ op: "add-query", q: { marks: {} } });
        await socket.op("add-query-ok");
        return socket;
      };
      const [byKey, byToken, byJwt, doomed] = [await open(key), await open(rita), await open(jwt), await open(sam)];

      // Runs that wake while the database is away (it goes at once and stays away longer), one of them
      // rita's, followed on her socket.
      const runs = await Promise.all([rita, key, key].map((token) => invoke("outage.nap", { ms: 6_000 }, token)));
      const runIds = runs.map((r) => r.body.runId as string);
      byToken.send({ op: "subscribe-stream", "execution-id": runIds[0] });
      expect(await byToken.op("stream-append")).toMatchObject({ status: "running", done: false });
      // A delayed invocation due during the outage; the schedule has ticked.
      const delayed = (await invoke("outage.later", { afterMs: 6_000 })).body.execution.output.id as string;
      await eventually(async () => (await call("/schedules")).body.items?.[0]?.lastTickAt, 10_000);

      const from = server.output().length;
      const stoppedAt = Date.now();
      cluster.stop();
      const outage = () => server?.output().slice(from) ?? "";
      // Each loop meets the outage, and goes on meeting it: the database stays away for more than two of the longest period.
      await eventually(() => {
        const said = logLines(outage()).map((l) => l.msg);
        return LOOPS.every((loop) => said.includes(down(loop)));
      }, 30_000).catch((error) => {
        throw new Error(`${error.message}; the log since the stop:\n${outage()}`);
      });
      await eventually(() => Date.now() - stoppedAt > 2 * LONGEST_PERIOD_MS + 1_000, 30_000);

      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      for (const refused of [await call("/executions"), await call(`/runs/${runIds[1]}`, { token: rita })]) {
        expect(refused).toEqual({
          status: 503,
          body: expect.objectContaining({ ok: false, error: "database_unavailable" }),
        });
      }
      expect(sockets.map((s) => s.closed)).toEqual([null, null, null, null]);

      cluster.start();
      const backAt = Date.now();
      await eventually(async () => (await fetch(`${base}/readyz`)).status === 200, 30_000);
      // The runs finish, their follower hears the end, and every socket's live query sees their marks.
      for (const id of runIds) {
        await eventually(async () => (await call(`/runs/${id}`)).body.status === "succeeded", 30_000);
      }
      expect(await byToken.next((m) => m.op === "stream-append" && m.done, 10_000)).toMatchObject({
        "execution-id": runIds[0],
        status: "succeeded",
      });
      for (const socket of [byKey, byToken, byJwt]) expect(await socket.op("refresh-ok", 10_000)).toBeTruthy();
      // Another instance's write is heard again (the relay between instances listens again): its row and its
      // word, as that instance would send them.
      const elsewhere = `written-elsewhere-${crypto.randomUUID()}`;
      await executeStatements(
        cluster.url,
        `insert into data_entities (id, entity, doc, created_at, updated_at)
           values ('${crypto.randomUUID()}', 'marks', '{"runId": "${elsewhere}"}', 0, 0);
         select pg_notify('actuate_data_changes', '{"origin": "another instance", "entities": ["marks"]}');`,
      );
      for (const socket of [byKey, byToken, byJwt]) {
        await socket.next((m) => m.op === "refresh-ok" && JSON.stringify(m).includes(elsewhere), 10_000);
      }
      // The schedule ticks again, the delayed invocation started.
      await eventually(
        async () => Date.parse((await call("/schedules")).body.items?.[0]?.lastTickAt ?? "") > backAt,
        15_000,
      );
      await eventually(async () => (await call(`/scheduled/${delayed}`)).body.status === "started", 15_000);
      // The sweep of revoked tokens runs again: a token revoked now closes its socket.
      await cli(["token", "revoke", sam.slice(0, 14)], env);
      await eventually(() => doomed.closed, 10_000);
      expect(doomed.closed?.code).toBe(4001);
      expect([byKey, byToken, byJwt].map((s) => s.closed)).toEqual([null, null, null]);

      const lines = logLines(outage());
      for (const loop of LOOPS) {
        expect({ loop, down: lines.filter((l) => l.msg === down(loop)).length }).toEqual({ loop, down: 1 });
        await eventually(() => logLines(outage()).some((l) => l.msg === back(loop)), 15_000).catch((error) => {
          const told = logLines(outage()).filter((l) => LOOPS.some((name) => l.msg.startsWith(name)));
          throw new Error(`${loop}: ${error.message}; what the loops said:\n${JSON.stringify(told, null, 1)}`);
        });
      }
      // Beyond the loops' own lines, the outage left only the requests' lines (the 503s above).
      const others = lines.filter(
        (l) => (l.level === "warn" || l.level === "error") && !LOOPS.some((loop) => l.msg === down(loop)) && !l.reqId,
      );
      expect(others.map((l) => l.msg)).toEqual([]);
      const log = server.output();
      for (const secret of ["params:", "Failed query", hashSecret(rita), hashSecret(sam), rita, jwt, "[exited"]) {
        expect(log).not.toContain(secret);
      }
    } catch (error) {
      console.error(`server output (last 8 000 characters):\n${server?.output().slice(-8000)}`);
      throw error;
    } finally {
      for (const socket of sockets) socket.close();
      await server?.kill();
      cluster.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
  180_000,
);
