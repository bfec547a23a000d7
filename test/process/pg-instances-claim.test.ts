import { describe, expect, test } from "bun:test";
import { startServer } from "../../src/main.ts";
import { openStore } from "../../src/store/open.ts";
import { runsOf } from "../fixtures/releases/basic/lib/probe.ts";
import { dialects } from "../support/databases.ts";
import { fixture, startTestServer } from "../support/server.ts";

/**
 * Two instances on one PostgreSQL database decide a claim through its unique index: one execution per
 * request id across instances (here); nothing answered before it is durable is test/process/durability.test.ts.
 */
const pg = dialects.find((d) => d.name === "postgres");

// biome-ignore lint/suspicious/noExplicitAny: tests read answers' JSON freely
type Json = any;

describe.skipIf(!pg)("PostgreSQL claim path", () => {
  test("two servers on one database get one requestId at once: one execution, the handler ran once, equal answers", async () => {
    const a = await startTestServer(pg as NonNullable<typeof pg>, { release: fixture("basic") });
    // A second instance: its own store (pool, instance id) and HTTP server, same database.
    const storeB = await openStore(a.config.databaseUrl);
    const b = await startServer(a.config, { store: storeB, log: () => {} });
    try {
      const requestIds: string[] = Array.from({ length: 12 }, () => crypto.randomUUID());
      const send = (base: string, requestId: string) =>
        fetch(`${base}/actions/test.count/invoke`, {
          method: "POST",
          headers: { authorization: `Bearer ${a.serviceKey}`, "content-type": "application/json" },
          body: JSON.stringify({ requestId, input: { key: requestId } }),
        });
      const answers = await Promise.all(
        requestIds.flatMap((requestId) =>
          Array.from({ length: 8 }, async (_, i) => {
            const response = await send(i % 2 ? b.url : a.url, requestId);
            return { requestId, status: response.status, body: (await response.json()) as Json };
          }),
        ),
      );
      for (const requestId of requestIds) {
        const mine = answers.filter((x) => x.requestId === requestId);
        expect(mine.map((x) => x.status)).toEqual(Array(8).fill(200));
        const executions = mine.map((x) => x.body.execution);
        expect(new Set(executions.map((x) => x.id)).size).toBe(1);
        for (const execution of executions) {
          expect(execution).toEqual({ ...executions[0], status: "succeeded", output: { runs: 1 } });
        }
        expect(runsOf(requestId)).toBe(1);
      }
      const stored = await a.store.executions.list({ limit: 100, maxValueBytes: 1024 });
      expect(stored.filter((row) => requestIds.includes(row.requestId))).toHaveLength(requestIds.length);
    } finally {
      await b.stop();
      await storeB.close();
      await a.stop();
    }
  }, 60_000);
});
