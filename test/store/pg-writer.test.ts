import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import type { ExecutionSettlement } from "../../src/store/executions.ts";
import { openStore } from "../../src/store/open.ts";
import type { ExecutionRow } from "../../src/store/rows.ts";
import type { Store } from "../../src/store/store.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";
import { row } from "../support/rows.ts";

const pg = dialects.find((d) => d.name === "postgres");

const succeeded = (output: unknown): ExecutionSettlement => ({
  status: "succeeded",
  output,
  errorCode: null,
  errorMessage: null,
  finishedAt: Date.now(),
});

describe.skipIf(!pg)("PostgreSQL execution writer", () => {
  let database: TestDatabase;
  let store: Store;
  let sql: postgres.Sql;
  beforeAll(async () => {
    database = await (pg as NonNullable<typeof pg>).create();
    store = await openStore(database.url);
    sql = postgres(database.url, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await sql.end();
    await store.close();
    await database.drop();
  });

  test("50 concurrent claims of one key: one is created, all name the same execution", async () => {
    const requestId = crypto.randomUUID();
    const claims = await Promise.all(Array.from({ length: 50 }, () => store.executions.claim(row({ requestId }))));
    expect(claims.filter((c) => c.created).length).toBe(1);
    expect(new Set(claims.map((c) => c.row.id)).size).toBe(1);
    const stored = await sql`select count(*)::int as rows from executions where request_id = ${requestId}`;
    expect([...stored]).toEqual([{ rows: 1 }]);
  });

  test("one batch of claims and settles of one key in two environments: each environment's own, replays too", async () => {
    await sql`insert into environments (id, handle, revision, updated_at, created_at, changed)
      values (2, 'two', 0, 0, 0, 0) on conflict do nothing`;
    const two = store.environment(2);
    const requestId = crypto.randomUUID();
    // In one turn: one INSERT for all, the replays conflicting in their own environment only.
    const claims = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? two : store).executions.claim(row({ requestId }))),
    );
    expect(claims.filter((c) => c.created).length).toBe(2);
    const [inOne, inTwo] = [claims[0]?.row as ExecutionRow, claims[1]?.row as ExecutionRow];
    expect(inOne.id).not.toBe(inTwo.id);
    for (const [i, claim] of claims.entries()) expect(claim.row.id).toBe(i % 2 ? inTwo.id : inOne.id);
    await Promise.all([
      store.executions.settle(inOne.id, succeeded(1)),
      two.executions.settle(inTwo.id, succeeded(2)),
      expect(store.executions.settle(inTwo.id, succeeded(3))).rejects.toThrow(/not stored/),
    ]);
    const stored = await sql`select environment, output from executions where request_id = ${requestId}
      order by environment`;
    expect([...stored]).toEqual([
      { environment: 1, output: 1 },
      { environment: 2, output: 2 },
    ]);
  });

  test("two instances claiming one key together: the database decides, one is created", async () => {
    const other = await openStore(database.url);
    try {
      const requestId = crypto.randomUUID();
      const claims = await Promise.all(
        Array.from({ length: 40 }, (_, i) => (i % 2 ? other : store).executions.claim(row({ requestId }))),
      );
      expect(claims.filter((c) => c.created).length).toBe(1);
      expect(new Set(claims.map((c) => c.row.id)).size).toBe(1);
    } finally {
      await other.close();
    }
  });

  test("a claim of a key committed earlier gets the stored row, typed as drizzle reads it", async () => {
    const first = row({ input: { b: 1, a: [true, null, "x"] } });
    await store.executions.claim(first);
    await store.executions.settle(first.id, succeeded({ sum: 3 }));
    const again = await store.executions.claim(row({ requestId: first.requestId }));
    expect(again.created).toBe(false);
    expect(again.row).toEqual({ ...first, status: "succeeded", output: { sum: 3 }, finishedAt: expect.any(Number) });
    expect(again.row).toEqual((await store.executions.get(first.id)) as ExecutionRow);
  });

  test("claims of different keys issued together are all created, in one statement's commit", async () => {
    const rows = Array.from({ length: 30 }, () => row({ principalId: "many" }));
    const claims = await Promise.all(rows.map((r) => store.executions.claim(r)));
    expect(claims.map((c) => [c.created, c.row.id])).toEqual(rows.map((r) => [true, r.id]));
    // Rows written by one statement (its own transaction) share their xmin.
    const [stored] = await sql`select count(*)::int as rows, count(distinct xmin::text)::int as commits
      from executions where principal_id = 'many'`;
    expect(stored).toEqual({ rows: 30, commits: 1 });
  });

  test("a queue too large for one statement goes out in several, and every claim lands", async () => {
    const blob = "x".repeat(2_500_000);
    const rows = Array.from({ length: 3 }, () => row({ principalId: "large", input: { blob } }));
    const claims = await Promise.all(rows.map((r) => store.executions.claim(r)));
    expect(claims.every((c) => c.created)).toBe(true);
    const stored = await sql`select count(*)::int as rows, count(distinct xmin::text)::int as commits,
      min(length(input ->> 'blob'))::int as shortest from executions where principal_id = 'large'`;
    expect([...stored]).toEqual([{ rows: 3, commits: 3, shortest: blob.length }]);
  });

  test("a bad row fails only its own claim, not the others queued with it", async () => {
    const taken = row();
    await store.executions.claim(taken);
    const good = Array.from({ length: 5 }, () => row({ principalId: "neighbour" }));
    const clash = row({ id: taken.id, principalId: "neighbour" });
    const results = await Promise.allSettled([...good, clash].map((r) => store.executions.claim(r)));
    expect(results.slice(0, 5).map((r) => r.status === "fulfilled" && r.value.created)).toEqual(Array(5).fill(true));
    expect(results[5]).toMatchObject({ status: "rejected", reason: expect.objectContaining({ code: "23505" }) });
    expect(await store.executions.get(taken.id)).toMatchObject({ principalId: "alice" });
  });

  test("settles issued together land, and one of an unknown id fails alone", async () => {
    const rows = Array.from({ length: 10 }, () => row());
    await Promise.all(rows.map((r) => store.executions.claim(r)));
    const unknown = Bun.randomUUIDv7();
    const results = await Promise.allSettled([
      ...rows.map((r, i) => store.executions.settle(r.id, succeeded({ i }))),
      store.executions.settle(unknown, succeeded({})),
    ]);
    expect(results.slice(0, 10).every((r) => r.status === "fulfilled")).toBe(true);
    expect(results[10]).toMatchObject({
      status: "rejected",
      reason: expect.objectContaining({ message: `execution ${unknown} is not stored` }),
    });
    expect(await store.executions.get(rows[3]?.id ?? "")).toMatchObject({ status: "succeeded", output: { i: 3 } });
    const commits = await sql`select count(distinct xmin::text)::int as commits from executions
      where id in ${sql(rows.map((r) => r.id))}`;
    expect([...commits]).toEqual([{ commits: 1 }]);
  });

  test("claims and settles queued together: a bad claim and an unknown settle fail alone", async () => {
    const taken = row();
    await store.executions.claim(taken);
    const running = row({ principalId: "mixed-bad" });
    await store.executions.claim(running);
    const unknown = Bun.randomUUIDv7();
    const good = row({ principalId: "mixed-bad" });
    const results = await Promise.allSettled([
      store.executions.claim(good),
      store.executions.claim(row({ id: taken.id, principalId: "mixed-bad" })),
      store.executions.settle(running.id, succeeded({ kept: true })),
      store.executions.settle(unknown, succeeded({})),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled", "rejected"]);
    expect(results[0]).toMatchObject({ value: { created: true } });
    expect(results[1]).toMatchObject({ reason: expect.objectContaining({ code: "23505" }) });
    expect(results[3]).toMatchObject({
      reason: expect.objectContaining({ message: `execution ${unknown} is not stored` }),
    });
    expect(await store.executions.get(running.id)).toMatchObject({ status: "succeeded", output: { kept: true } });
    expect(await store.executions.get(good.id)).toMatchObject({ status: "running" });
  });

  test("a replay and two settles of one id, queued with a new claim: each is answered as if alone", async () => {
    const first = row();
    await store.executions.claim(first);
    const fresh = row();
    const [replay, created] = await Promise.all([
      store.executions.claim(row({ requestId: first.requestId })),
      store.executions.claim(fresh),
      store.executions.settle(first.id, succeeded({ n: 1 })),
      store.executions.settle(first.id, succeeded({ n: 2 })),
    ]);
    expect(replay).toMatchObject({ created: false, row: { id: first.id } });
    expect(created).toMatchObject({ created: true, row: { id: fresh.id } });
    expect(await store.executions.get(first.id)).toMatchObject({ output: { n: 2 } });
  });

  test("two settles of one id in one turn are applied in order", async () => {
    const r = row();
    await store.executions.claim(r);
    await Promise.all([
      store.executions.settle(r.id, succeeded({ n: 1 })),
      store.executions.settle(r.id, succeeded({ n: 2 })),
    ]);
    expect(await store.executions.get(r.id)).toMatchObject({ output: { n: 2 } });
  });

  test("input and output are stored as jsonb objects, not as JSON text", async () => {
    const r = row({ input: { text: 'quoted "and" \\ escaped', n: 1.5 } });
    await store.executions.claim(r);
    await store.executions.settle(r.id, succeeded({ ok: true }));
    const [stored] =
      await sql`select jsonb_typeof(input) as input, jsonb_typeof(output) as output, input ->> 'text' as text
      from executions where id = ${r.id}`;
    expect(stored).toEqual({ input: "object", output: "object", text: 'quoted "and" \\ escaped' });
  });

  test("a failed execution keeps a null output (SQL NULL, not JSON null)", async () => {
    const r = row();
    await store.executions.claim(r);
    await store.executions.settle(r.id, {
      status: "failed",
      output: null,
      errorCode: "action_failed",
      errorMessage: "boom",
      finishedAt: Date.now(),
    });
    const [stored] = await sql`select output is null as missing from executions where id = ${r.id}`;
    expect(stored).toEqual({ missing: true });
    expect(await store.executions.get(r.id)).toMatchObject({ output: null, errorMessage: "boom" });
  });

  test("close waits for queued writes", async () => {
    const other = await openStore(database.url);
    const r = row();
    await other.executions.claim(r);
    const settling = other.executions.settle(r.id, succeeded({ late: true }));
    await other.close();
    await settling;
    expect(await store.executions.get(r.id)).toMatchObject({ output: { late: true } });
  });
});
