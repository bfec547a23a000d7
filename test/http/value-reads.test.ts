import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve } from "../support/cli.ts";
import { type Dialect, dialects, executeStatements, selectRows, type TestDatabase } from "../support/databases.ts";
import { eventually, fixture } from "../support/server.ts";

// Issue #46: to decide which values a list leaves out, the list measured each one by reading it, so one
// GET /executions?limit=200 of large executions read hundreds of MiB (and held /healthz meanwhile on
// SQLite). Sizes are stored with the values now. What a request makes the database read is counted
// here, not timed: on SQLite the bytes the server's serving thread reads from its files (a server started
// for the request, so SQLite's page cache holds nothing of before); on PostgreSQL the blocks of TOAST,
// where every value over ~2 KiB lives, that its statements touch.

const KiB = 1024;
const MiB = 1024 * KiB;
const EXECUTIONS = 100;
const RUNS = 2;
const STEPS = 4;
/** As much of the database as the requests below may read: pages of rows and indexes, no value. */
const READ_BOUND = MiB;

/** 1 MiB of text PostgreSQL cannot compress (a repeated character would fit in a few blocks of TOAST). */
const largeText = () => randomBytes(768 * KiB).toString("base64");

/** Bytes a thread has read through system calls (`rchar`); the main thread's id is the process's. */
function threadReads(pid: number): number {
  const rchar = readFileSync(`/proc/${pid}/task/${pid}/io`, "utf8").match(/^rchar: (\d+)$/m)?.[1];
  if (rchar === undefined) throw new Error(`no rchar in /proc/${pid}/task/${pid}/io`);
  return Number(rchar);
}

const VALUE_TABLES = ["executions", "workflow_runs", "workflow_steps"];
const inValueTables = VALUE_TABLES.map((t) => `'${t}'`).join(", ");

/** Bytes of the value tables' TOAST read or found in PostgreSQL's buffers, as its statistics count them. */
async function toastTouched(url: string): Promise<number> {
  const [row] = await selectRows(
    url,
    `select coalesce(sum(toast_blks_read + toast_blks_hit), 0) * current_setting('block_size')::int as bytes
     from pg_statio_user_tables where relname in (${inValueTables})`,
  );
  return Number(row?.bytes);
}

/** A backend's statistics are flushed by the time it is gone: wait for the server's to have exited. */
const noServerBackends = (url: string) =>
  eventually(async () => {
    const [row] = await selectRows(
      url,
      `select count(*) as n from pg_stat_activity
       where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()`,
    );
    return Number(row?.n) === 0;
  }, 15_000);

interface Answer {
  status: number;
  text: string;
}

for (const dialect of dialects) {
  describe.skipIf(process.platform !== "linux")(`large values stay in the database (${dialect.name})`, () => {
    const key = `value-reads-${crypto.randomUUID()}`;
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    let database: TestDatabase;
    let dataDir: string;
    const inputBytes = new Map<string, number>();
    const runIds: string[] = [];
    const env = () => ({ DATA_DIR: dataDir, DATABASE_URL: database.url, SERVICE_KEYS: key });

    beforeAll(async () => {
      database = await dialect.create();
      dataDir = mkdtempSync(join(tmpdir(), "actuate-value-reads-"));
      const server = await serve(["start", "--release", fixture("large-values")], env());
      try {
        if (dialect.name === "postgres") {
          // No vacuum may read the TOAST while the tests count who does.
          const off = VALUE_TABLES.map(
            (t) => `alter table ${t} set (autovacuum_enabled = false, toast.autovacuum_enabled = false);`,
          );
          await executeStatements(database.url, off.join("\n"));
        }
        const invoke = async (action: string, input: unknown) => {
          const response = await fetch(`${server.url}/actions/${action}/invoke`, {
            method: "POST",
            headers,
            body: JSON.stringify({ requestId: crypto.randomUUID(), input }),
          });
          return response.json() as Promise<{ execution: { id: string; status: string }; runId?: string }>;
        };
        for (let i = 0; i < EXECUTIONS; i++) {
          const input = { text: largeText() };
          const { execution } = await invoke("big.echo", input);
          expect(execution.status).toBe("succeeded");
          inputBytes.set(execution.id, Buffer.byteLength(JSON.stringify(input)));
        }
        for (let i = 0; i < RUNS; i++)
          runIds.push((await invoke("big.copy", { text: largeText(), steps: STEPS })).runId ?? "");
        for (const runId of runIds) {
          const ended = await fetch(`${server.url}/executions/${runId}/result`, { headers });
          expect(ended.status).toBe(200);
          expect(((await ended.json()) as { status: string }).status).toBe("succeeded");
        }
      } finally {
        await server.kill();
      }
    }, 300_000);

    afterAll(async () => {
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    /**
     * A request to a server started for it alone, and how many bytes of the database it made the database
     * read. `warm` runs first, unmeasured, and reads no row: the modules a route loads on first use are files too.
     */
    async function readFor(dialect: Dialect, warm: (url: string) => Promise<Answer>, request: typeof warm) {
      if (dialect.name === "postgres") await noServerBackends(database.url);
      const toastBefore = dialect.name === "postgres" ? await toastTouched(database.url) : 0;
      const server = await serve(["start"], env());
      let answer: Answer;
      let read = 0;
      try {
        await warm(server.url);
        const before = threadReads(server.proc.pid);
        answer = await request(server.url);
        read = threadReads(server.proc.pid) - before;
      } finally {
        await server.kill();
      }
      if (dialect.name === "postgres") {
        await noServerBackends(database.url);
        read = (await toastTouched(database.url)) - toastBefore;
      }
      return { answer, read };
    }

    const get = (path: string) => async (url: string) => {
      const response = await fetch(`${url}${path}`, { headers });
      return { status: response.status, text: await response.text() };
    };

    test(`GET /executions?limit=200 over ${EXECUTIONS} executions of 1 MiB in and out reads none of them and answers their sizes`, async () => {
      const { answer, read } = await readFor(
        dialect,
        get(`/executions/${crypto.randomUUID()}`),
        get("/executions?limit=200"),
      );
      expect(answer.status).toBe(200);
      expect(read).toBeLessThan(READ_BOUND);
      expect(answer.text.length).toBeLessThan(EXECUTIONS * KiB);
      const { items } = JSON.parse(answer.text) as { items: Record<string, { bytes: number } | undefined>[] };
      const listed = items.filter((item) => inputBytes.has(item.id as unknown as string));
      expect(listed).toHaveLength(EXECUTIONS);
      for (const item of listed) {
        const bytes = inputBytes.get(item.id as unknown as string);
        expect(item.inputTruncated).toEqual({ bytes: bytes as number });
        expect(item.outputTruncated).toEqual({ bytes: bytes as number });
        expect(item.input).toBeUndefined();
        expect(item.output).toBeUndefined();
      }
    }, 60_000);

    test("GET /runs reads none of its runs' large values", async () => {
      const { answer, read } = await readFor(dialect, get(`/runs/${crypto.randomUUID()}`), get("/runs?limit=200"));
      expect(answer.status).toBe(200);
      expect(read).toBeLessThan(READ_BOUND);
      const { items } = JSON.parse(answer.text) as { items: { id: string; inputTruncated?: unknown }[] };
      expect(items.map((item) => item.id).sort()).toEqual([...runIds].sort());
      for (const item of items) expect(item.inputTruncated).toBeDefined();
    }, 60_000);

    test("the MCP run resource reads none of the run's or its steps' large values", async () => {
      const runId = runIds[0] as string;
      const readResource = (runId: string) => async (url: string) => {
        const response = await fetch(`${url}/mcp`, {
          method: "POST",
          headers: { ...headers, accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "resources/read",
            params: { uri: `service://local/runs/${runId}` },
          }),
        });
        return { status: response.status, text: await response.text() };
      };
      const { answer, read } = await readFor(dialect, readResource(crypto.randomUUID()), readResource(runId));
      expect(answer.status).toBe(200);
      expect(read).toBeLessThan(READ_BOUND);
      const run = JSON.parse(JSON.parse(answer.text).result.contents[0].text);
      expect(run).toMatchObject({ id: runId, status: "succeeded" });
      expect(run.steps).toHaveLength(STEPS);
      for (const step of run.steps) expect(step.outputTruncated.bytes).toBeGreaterThan(MiB);
      expect(run.outputTruncated.bytes).toBeGreaterThan(MiB);
    }, 60_000);
  });
}
