import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { EXECUTION_STATUSES, type ExecutionStatus } from "../../src/wire/statuses.ts";
import type { StatsSeries } from "../../src/wire/views.ts";
import { dialects, executeStatements } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { answerSchemas } from "../support/openapi-schemas.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** An execution written straight into the table at a chosen time, as the series reads it back. */
interface Row {
  id: string;
  action: string;
  status: ExecutionStatus;
  createdAt: number;
  finishedAt: number | null;
}

const TERMINAL: ExecutionStatus[] = ["succeeded", "failed", "canceled"];

/**
 * Executions over the last 50 minutes of two actions: some minutes with many (durations spread, so p50 and
 * p95 differ), some finishing a minute or more after they were created, some not finished, one created
 * before the hour and finished inside it.
 */
function rowsAround(now: number): Row[] {
  const rows: Row[] = [];
  const add = (createdAt: number, status: ExecutionStatus, durationMs: number | null, action: string) =>
    rows.push({
      id: Bun.randomUUIDv7("hex", createdAt),
      action,
      status,
      createdAt,
      finishedAt: durationMs === null ? null : createdAt + durationMs,
    });
  for (let minute = 3; minute <= 50; minute += 1 + (minute % 4)) {
    const start = now - minute * MINUTE + 1_000;
    const many = minute % 5 === 0 ? 23 : 1 + (minute % 3);
    for (let i = 0; i < many; i++) {
      const status = TERMINAL[(i + minute) % 3] as ExecutionStatus;
      // Durations from 7 ms to over a minute: some finish in a later bucket than they began in.
      add(
        start + i * 500,
        status,
        7 + ((i * 7_919 + minute * 104_729) % 95_000),
        i % 4 === 0 ? "series.b" : "series.a",
      );
    }
    if (minute % 7 === 0) add(start + 200, "running", null, "series.a");
    if (minute % 11 === 0) add(start + 300, "queued", null, "series.b");
  }
  add(now - 70 * MINUTE, "failed", 50 * MINUTE, "series.a");
  return rows;
}

const insertSql = (rows: Row[]) =>
  `insert into executions (id, request_id, principal_kind, principal_id, action, kind, release_version, contract_hash,
     input_fingerprint, input, input_bytes, status, created_at, started_at, finished_at) values ${rows
       .map(
         (r) =>
           `('${r.id}', '${crypto.randomUUID()}', 'service', 'series', '${r.action}', 'function', 't1', 'c', 'f', '{}', 2,
             '${r.status}', ${r.createdAt}, ${r.createdAt}, ${r.finishedAt ?? "null"})`,
       )
       .join(", ")}`;

/** The smallest value with at least `percent` % of the values at or below it (nearest rank). */
const nearestRank = (sorted: number[], percent: number) =>
  sorted.find((_, i) => 100 * (i + 1) >= percent * sorted.length) as number;

/** The series `answer` should be, computed here from the rows themselves with the answer's own buckets. */
function expectedBuckets(answer: StatsSeries, rows: Row[], action: string | null) {
  const since = Date.parse(answer.window.since);
  const step = answer.stepMs;
  const bucketOf = (at: number) => Math.floor((at - since) / step);
  return answer.buckets.map((_, index) => {
    const mine = rows.filter((r) => action === null || r.action === action);
    const created = mine.filter((r) => bucketOf(r.createdAt) === index);
    const finished = mine.filter((r) => r.finishedAt !== null && bucketOf(r.finishedAt) === index);
    const durations = finished.map((r) => (r.finishedAt as number) - r.createdAt).sort((a, b) => a - b);
    return {
      at: new Date(since + index * step).toISOString(),
      executions: Object.fromEntries(
        EXECUTION_STATUSES.map((s) => [s, created.filter((r) => r.status === s).length]),
      ) as Record<ExecutionStatus, number>,
      failureRate: finished.length ? finished.filter((r) => r.status === "failed").length / finished.length : null,
      durationMs: finished.length ? { p50: nearestRank(durations, 50), p95: nearestRank(durations, 95) } : null,
    };
  });
}

interface ErrorBody {
  ok: false;
  error: string;
  details?: { issues: { where: string }[] };
}

for (const dialect of dialects) {
  describe(`GET /stats/series (${dialect.name})`, () => {
    let t: TestServer;
    let rows: Row[];
    let matches: Awaited<ReturnType<typeof answerSchemas>>;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic") });
      rows = rowsAround(Date.now());
      await executeStatements(t.config.databaseUrl, insertSql(rows));
      matches = await answerSchemas(t);
    });
    afterAll(() => t.stop());

    const series = async (query: string): Promise<StatsSeries> => {
      const res = await t.fetch(`/stats/series${query}`);
      expect(res.status).toBe(200);
      const body = await res.json();
      matches(body, "StatsSeries");
      return body;
    };
    const expectError = async (res: Response, status: number, error: string, where?: string) => {
      expect(res.status).toBe(status);
      const body = (await res.json()) as ErrorBody;
      expect(body).toMatchObject({ ok: false, error });
      matches(body, "Error");
      if (where) expect(body.details?.issues[0]?.where).toBe(where);
    };

    test("every bucket's counts, failure rate and p50/p95 are the stored rows' (all actions, then one)", async () => {
      const all = await series("?window=1h&step=1m");
      expect(all.stepMs).toBe(MINUTE);
      expect(all.action).toBeNull();
      expect(all.buckets).toHaveLength(60);
      expect(all.buckets).toEqual(expectedBuckets(all, rows, null));
      // The rows fill buckets of every kind: many finished, one, none; some created where none finished.
      expect(all.buckets.filter((b) => b.durationMs && b.durationMs.p50 !== b.durationMs.p95).length).toBeGreaterThan(
        3,
      );
      expect(all.buckets.filter((b) => b.durationMs === null).length).toBeGreaterThan(3);
      expect(all.buckets.some((b) => b.failureRate !== null && b.failureRate > 0 && b.failureRate < 1)).toBe(true);

      const one = await series("?window=1h&step=1m&action=series.b");
      expect(one.action).toBe("series.b");
      expect(one.buckets).toEqual(expectedBuckets(one, rows, "series.b"));
      const total = (s: StatsSeries) => s.buckets.reduce((n, b) => n + b.executions.succeeded, 0);
      expect(total(one)).toBeGreaterThan(0);
      expect(total(one)).toBeLessThan(total(all));

      const none = await series("?window=1h&action=series.none");
      expect(none.buckets.every((b) => b.durationMs === null && b.failureRate === null)).toBe(true);
      expect(none.buckets.every((b) => Object.values(b.executions).every((n) => n === 0))).toBe(true);

      const wide = await series("?window=24h&step=7m");
      expect(wide.buckets).toEqual(expectedBuckets(wide, rows, null));
    });

    test("buckets are aligned to the step, oldest first, every one present, the last holding now; default steps", async () => {
      for (const [query, step, count] of [
        ["?window=24h&step=1h", HOUR, 24],
        ["?window=24h&step=1m", MINUTE, 1_440],
        ["?window=1h", MINUTE, 60],
        ["?window=24h", 24 * MINUTE, 60],
        ["", MINUTE, 60],
        ["?window=15m", MINUTE, 15],
        ["?window=30s", 30_000, 1],
        ["?window=1h&step=7m", 7 * MINUTE, 8],
      ] as const) {
        const before = Date.now();
        const answer = await series(query);
        const after = Date.now();
        expect({ query, stepMs: answer.stepMs, count: answer.buckets.length }).toEqual({ query, stepMs: step, count });
        const starts = answer.buckets.map((b) => Date.parse(b.at));
        expect(starts.every((at, i) => at % step === 0 && (i === 0 || at - (starts[i - 1] as number) === step))).toBe(
          true,
        );
        expect(starts[0]).toBe(Date.parse(answer.window.since));
        const until = Date.parse(answer.window.until);
        expect(until).toBeGreaterThanOrEqual(before);
        expect(until).toBeLessThanOrEqual(after);
        const last = starts.at(-1) as number;
        expect(last <= until && until < last + step).toBe(true);
      }
    });

    test("an invoke is counted in the bucket holding now", async () => {
      const lastOf = async () => (await series("?window=5m&step=5m&action=test.fail")).buckets.at(-1);
      const before = await lastOf();
      expect((await t.invoke("test.fail", { message: "counted" })).status).toBe(200);
      const after = await eventually(async () => {
        const last = await lastOf();
        // A new bucket may have begun meanwhile: then it holds the one execution alone.
        return last && last.at === before?.at
          ? last.executions.failed === before.executions.failed + 1 && last
          : last?.executions.failed === 1 && last;
      });
      expect(after ? after.failureRate : null).toBe(1);
      expect(after ? after.durationMs?.p95 : null).toBeGreaterThanOrEqual(0);
    });

    test("window and step are checked: 400 invalid_request naming the parameter", async () => {
      for (const [query, where] of [
        ["?window=25h", "/query/window"],
        ["?window=1y", "/query/window"],
        ["?window=0m", "/query/window"],
        ["?step=0s", "/query/step"],
        ["?step=1d", "/query/step"],
        ["?window=1h&step=2h", "/query/step"],
        ["?window=24h&step=59s", "/query/step"],
        ["?window=10s&step=11s", "/query/step"],
        ["?action=not%20an%20action", "/query/action"],
        ["?action=", "/query/action"],
      ] as const) {
        await expectError(await t.fetch(`/stats/series${query}`), 400, "invalid_request", where);
      }
      await expectError(await t.fetch("/stats/series?bucket=1m"), 400, "invalid_request");
    });

    test("service keys only: 401 without a credential, 403 for a user; /openapi.json lists it", async () => {
      await expectError(await t.fetch("/stats/series", { token: null }), 401, "unauthorized");
      await expectError(await t.fetch("/stats/series", { token: await t.userToken("ursula") }), 403, "access_denied");
      const doc = await (await t.fetch("/openapi.json")).json();
      expect(doc.paths["/stats/series"].get.operationId).toBe("statsSeries");
      expect(doc.paths["/stats/series"].get.parameters.map((p: { name: string }) => p.name)).toEqual([
        "window",
        "step",
        "action",
      ]);
    });
  });

  describe(`GET /stats/series in hosting mode (${dialect.name})`, () => {
    let h: HostingServer;
    beforeAll(async () => {
      h = await startHostingServer(dialect, {
        environments: [
          { handle: "a", organization: "acme", release: fixture("environments") },
          { handle: "b", organization: "beta", release: fixture("environments") },
        ],
      });
    });
    afterAll(() => h?.stop());

    test("an environment's series counts its own executions only", async () => {
      const created = async (handle: string) => {
        const res = await h.fetch(handle, "/stats/series?window=1h");
        expect(res.status).toBe(200);
        const body = (await res.json()) as StatsSeries;
        return body.buckets.reduce((n, b) => n + b.executions.succeeded, 0);
      };
      const [a0, b0] = [await created("a"), await created("b")];
      for (let i = 0; i < 3; i++) expect((await h.invoke("a", "env.whoami", { note: `series ${i}` })).status).toBe(200);
      expect(await created("a")).toBe(a0 + 3);
      expect(await created("b")).toBe(b0);
    });
  });
}
