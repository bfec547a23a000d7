import { describe, expect, test } from "bun:test";
import { type RunFilter, runCanceled } from "../../src/store/runs.ts";
import type { Store } from "../../src/store/store.ts";
import { at, dataWrites, type OpenStores, runRows, stepRow, storesPerTest, T0 } from "./fixture.ts";

const LEASE = 10_000;
const done = { status: "succeeded", output: { shipped: true }, errorCode: null, errorMessage: null } as const;

/**
 * What every RunStore promises (src/store/runs.ts), whatever the dialect: run by test/store/contracts.test.ts.
 * Times come from a fake clock (`at`); owners "A" and "B" are two workers, on two instances where the
 * dialect has several.
 */
export function runStoreContract(open: OpenStores) {
  let store: Store;
  let peer: Store;
  storesPerTest(open, (opened) => {
    ({ store, peer } = opened);
  });

  /** A run admitted at T0 and claimed by `owner` at `now`, leased until now + LEASE. */
  async function claimedRun(owner = "A", now = T0) {
    const { execution, run } = runRows();
    await store.runs.admit(execution, run);
    const [claimed] = await store.runs.claim(owner, now, now + LEASE, 1);
    expect(claimed?.id).toBe(run.id);
    return run.id;
  }

  describe("admit", () => {
    test("admits the execution and its run together; a replay of the key answers the first, adding nothing", async () => {
      const first = runRows();
      expect(await store.runs.admit(first.execution, first.run)).toEqual({ execution: first.execution, created: true });
      expect(await store.runs.get(first.run.id)).toEqual(first.run);
      expect(await store.executions.get(first.run.id)).toEqual(first.execution);

      const replay = runRows({ requestId: first.execution.requestId });
      const again = await peer.runs.admit(replay.execution, replay.run);
      expect(again).toEqual({ execution: expect.objectContaining({ id: first.run.id }), created: false });
      expect(await store.runs.get(replay.run.id)).toBeNull();
      expect(await store.executions.get(replay.run.id)).toBeNull();

      const otherCaller = runRows({ requestId: first.execution.requestId, principalId: "bob" });
      expect((await store.runs.admit(otherCaller.execution, otherCaller.run)).created).toBe(true);
    });

    test("a run keeps its caller's verified claims (none for a caller without them)", async () => {
      const claimed = runRows({ claims: { role: "admin", groups: ["ops"] } });
      const plain = runRows({ now: at(1) });
      for (const { execution, run } of [claimed, plain]) await store.runs.admit(execution, run);
      expect((await peer.runs.get(claimed.run.id))?.principalClaims).toEqual({ role: "admin", groups: ["ops"] });
      expect((await peer.runs.get(plain.run.id))?.principalClaims).toBeNull();
      // The earliest due first: the one with claims.
      const [leased] = await peer.runs.claim("B", at(2), at(2 + LEASE), 1);
      expect(leased?.principalClaims).toEqual({ role: "admin", groups: ["ops"] });
      const listed = await store.runs.list({ limit: 10, maxValueBytes: 4096 });
      expect(listed.find((r) => r.id === claimed.run.id)?.principalClaims).toEqual({ role: "admin", groups: ["ops"] });
    });

    test("a run admitted with a lease is held by that owner at once", async () => {
      const { execution, run } = runRows({ lease: { owner: "A", until: at(LEASE) } });
      await store.runs.admit(execution, run);
      expect(await peer.runs.claim("B", at(1), at(1 + LEASE), 10)).toEqual([]);
      expect(await store.runs.saveStep("A", stepRow(run.id))).toEqual({ saved: true });
    });

    test("lists leave inputs over maxValueBytes in the database: null, with their stored size", async () => {
      const large = runRows({ input: { text: "x".repeat(5_000) } });
      const small = runRows({ input: { text: "s" } });
      for (const { execution, run } of [large, small]) await store.runs.admit(execution, run);
      const rows = await store.runs.list({ limit: 10, maxValueBytes: 4096 });
      const byId = new Map(rows.map((r) => [r.id, r]));
      expect(byId.get(large.run.id)).toMatchObject({ input: null, outputBytes: 0, errorMessageBytes: 0 });
      expect(byId.get(large.run.id)?.inputBytes).toBeGreaterThan(5_000);
      expect(byId.get(small.run.id)?.input).toEqual({ text: "s" });
      expect((await store.runs.get(large.run.id))?.input).toEqual({ text: "x".repeat(5_000) });
    });

    test("the sizes are those of the values as written: an input at admission, an output at the end", async () => {
      const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));
      const input = { text: "ü".repeat(3_000) };
      const { execution, run } = runRows({ input });
      await store.runs.admit(execution, run);
      await store.runs.claim("A", T0, T0 + LEASE, 1);
      const output = { text: "€".repeat(2_000) };
      expect(await store.runs.finish("A", run.id, { ...done, output, finishedAt: at(5) })).toEqual({ saved: true });
      const sizes = { input, output, inputBytes: jsonBytes(input), outputBytes: jsonBytes(output) };
      expect((await store.runs.list({ limit: 10, maxValueBytes: 100_000 }))[0]).toMatchObject(sizes);
      expect(await store.runs.getBounded(run.id, 100_000)).toMatchObject(sizes);
      const [listedExecution] = await store.executions.list({ limit: 10, maxValueBytes: 100_000 });
      expect(listedExecution).toMatchObject({ id: run.id, ...sizes });
    });

    test("getBounded reads one run as a list does; null for none", async () => {
      const large = runRows({ input: { text: "x".repeat(5_000) } });
      await store.runs.admit(large.execution, large.run);
      const bounded = await store.runs.getBounded(large.run.id, 4096);
      expect(bounded).toMatchObject({ id: large.run.id, input: null, outputBytes: 0, errorMessageBytes: 0 });
      expect(bounded?.inputBytes).toBeGreaterThan(5_000);
      expect(await store.runs.getBounded(crypto.randomUUID(), 4096)).toBeNull();
    });

    test("getManyBounded reads the runs of the ids that exist, each as getBounded does", async () => {
      const [large, small] = [runRows({ input: { text: "x".repeat(5_000) } }), runRows()];
      for (const { execution, run } of [large, small]) await store.runs.admit(execution, run);
      const read = await store.runs.getManyBounded([small.run.id, crypto.randomUUID(), large.run.id], 4096);
      expect(read.map((run) => run.id).sort()).toEqual([large.run.id, small.run.id].sort());
      for (const run of read) expect(run).toEqual((await store.runs.getBounded(run.id, 4096)) as never);
      expect(await store.runs.getManyBounded([], 4096)).toEqual([]);
    });

    test("lists runs newest first, filtered and paged by id", async () => {
      const [first, bobs, last] = [runRows(), runRows({ principalId: "bob" }), runRows()];
      for (const { execution, run } of [first, bobs, last]) await store.runs.admit(execution, run);
      const listed = async (filter: Partial<RunFilter>) =>
        (await store.runs.list({ limit: 10, maxValueBytes: 4096, ...filter })).map((r) => r.id);
      expect(await listed({})).toEqual([last.run.id, bobs.run.id, first.run.id]);
      expect(await listed({ principal: { kind: "user", id: "alice" } })).toEqual([last.run.id, first.run.id]);
      expect(await listed({ beforeId: last.run.id, limit: 1 })).toEqual([bobs.run.id]);
    });

    test("answers a run's steps in the order the run reached them", async () => {
      const runId = await claimedRun();
      await store.runs.saveStep("A", stepRow(runId, { name: "second", seq: 1 }));
      await store.runs.saveStep("A", stepRow(runId, { name: "first", seq: 0 }));
      expect((await store.runs.steps(runId)).map((s) => s.name)).toEqual(["first", "second"]);
      expect((await store.runs.boundedSteps(runId, 4096)).map((s) => s.name)).toEqual(["first", "second"]);
    });

    test("boundedSteps leaves values over the bound in the database, in BOUNDED_STEP_VALUES order, with their sizes", async () => {
      const runId = await claimedRun();
      const large = { text: "x".repeat(5_000) };
      await store.runs.saveStep("A", stepRow(runId, { name: "large", seq: 0, output: large }));
      await store.runs.saveStep("A", stepRow(runId, { name: "small", seq: 1, output: { ok: true } }));
      await store.runs.saveStep(
        "A",
        stepRow(runId, { name: "failed", seq: 2, status: "failed", output: null, error: "e".repeat(5_000) }),
      );
      await store.runs.suspend("A", runId, {
        status: "running",
        wakeAt: at(100),
        now: at(3),
        step: stepRow(runId, { name: "retrying", seq: 3, status: "retrying", output: large, error: "boom" }),
      });
      const [largeStep, smallStep, failedStep, retrying] = await store.runs.boundedSteps(runId, 4096);
      expect(largeStep).toMatchObject({ name: "large", output: null, outputBytes: JSON.stringify(large).length });
      expect(smallStep).toMatchObject({ name: "small", output: { ok: true }, errorBytes: 0 });
      expect(failedStep).toMatchObject({ name: "failed", output: null, error: null, errorBytes: 5_000 });
      // The error comes after the output: a large output leaves it out too.
      expect(retrying).toMatchObject({ name: "retrying", output: null, error: null, errorBytes: 4 });
      expect((await store.runs.steps(runId))[0]?.output).toEqual(large);
    });
  });

  describe("claim", () => {
    test("takes due runs, starting them and their executions at the caller's time; not-yet-due runs stay", async () => {
      const due = runRows();
      const later = runRows({ now: at(5_000) });
      for (const { execution, run } of [due, later]) await store.runs.admit(execution, run);

      const claimed = await store.runs.claim("A", at(100), at(100 + LEASE), 10);
      expect(claimed).toEqual([
        {
          ...due.run,
          environment: 1,
          status: "running",
          leaseOwner: "A",
          leaseExpiresAt: at(100 + LEASE),
          updatedAt: at(100),
        },
      ]);
      expect(await store.executions.get(due.run.id)).toMatchObject({ status: "running", startedAt: at(100) });
      expect(await store.runs.get(later.run.id)).toMatchObject({ status: "queued", leaseOwner: null });
      expect((await store.runs.claim("A", at(5_000), at(5_000 + LEASE), 10)).map((r) => r.id)).toEqual([later.run.id]);
    });

    test("a run under a live lease is not claimed by another owner; once the lease expired it is", async () => {
      const runId = await claimedRun("A");
      expect(await peer.runs.claim("B", at(LEASE), at(2 * LEASE), 10)).toEqual([]);
      const [taken] = await peer.runs.claim("B", at(LEASE + 1), at(2 * LEASE), 10);
      expect(taken).toMatchObject({ id: runId, leaseOwner: "B", leaseExpiresAt: at(2 * LEASE) });
    });

    test("takes no more than the limit, the earliest due first", async () => {
      const [third, first, second] = [runRows({ now: at(3) }), runRows({ now: at(1) }), runRows({ now: at(2) })];
      for (const { execution, run } of [third, first, second]) await store.runs.admit(execution, run);
      const claimed = await store.runs.claim("A", at(10), at(10 + LEASE), 2);
      expect(claimed.map((r) => r.id)).toEqual([first.run.id, second.run.id]);
    });

    test("concurrent claims by many owners on every instance never hand one run to two of them", async () => {
      const rows = Array.from({ length: 30 }, () => runRows());
      for (const { execution, run } of rows) await store.runs.admit(execution, run);
      const owners = Array.from({ length: 12 }, (_, i) => `worker-${i}`);
      const claims = await Promise.all(
        owners.map((owner, i) => (i % 2 ? peer : store).runs.claim(owner, at(1), at(1 + LEASE), 4)),
      );
      const claimedIds = claims.flat().map((r) => r.id);
      expect(new Set(claimedIds).size).toBe(claimedIds.length);
      expect(claimedIds.length).toBe(30);
      for (const [i, owner] of owners.entries()) {
        for (const claimed of claims[i] ?? [])
          expect(await store.runs.get(claimed.id)).toMatchObject({ leaseOwner: owner });
      }
    });
  });

  describe("renew (the heartbeat)", () => {
    test("extends the leases the owner holds, so no one else claims them, and says whether a cancel was asked", async () => {
      const runId = await claimedRun("A");
      const unheld = runRows().run.id;
      expect(await store.runs.renew("A", [runId, unheld], at(LEASE + 5_000))).toEqual([
        { id: runId, cancelRequested: false },
      ]);
      expect(await peer.runs.claim("B", at(LEASE + 1), at(2 * LEASE), 10)).toEqual([]);
      await peer.runs.requestCancel(runId, at(LEASE + 2));
      expect(await store.runs.renew("A", [runId], at(LEASE + 9_000))).toEqual([{ id: runId, cancelRequested: true }]);
      expect(await store.runs.renew("A", [], at(LEASE + 9_000))).toEqual([]);
    });

    test("after a takeover the old owner's renewal answers nothing and leaves the new lease alone", async () => {
      const runId = await claimedRun("A");
      await peer.runs.claim("B", at(LEASE + 1), at(3 * LEASE), 10);
      expect(await store.runs.renew("A", [runId], at(5 * LEASE))).toEqual([]);
      expect(await store.runs.get(runId)).toMatchObject({ leaseOwner: "B", leaseExpiresAt: at(3 * LEASE) });
    });

    test("an owner whose lease ran out while no one claimed the run still holds it", async () => {
      const runId = await claimedRun("A");
      expect(await store.runs.renew("A", [runId], at(3 * LEASE))).toEqual([{ id: runId, cancelRequested: false }]);
      expect(await store.runs.saveStep("A", stepRow(runId))).toEqual({ saved: true });
    });
  });

  describe("saveStep", () => {
    test("stores the step row, and its data writes with it", async () => {
      const runId = await claimedRun("A");
      const data = dataWrites(store);
      const step = stepRow(runId);
      expect(await store.runs.saveStep("A", step, [data.insertLabel("paid")])).toEqual({ saved: true });
      expect(await store.runs.steps(runId)).toEqual([step]);
      expect(await data.labels()).toEqual(["paid"]);
    });

    test("a worker that lost its lease writes nothing, neither the row nor its data writes, and is told so", async () => {
      const runId = await claimedRun("A");
      await peer.runs.claim("B", at(LEASE + 1), at(3 * LEASE), 10);
      const data = dataWrites(store);
      expect(await store.runs.saveStep("A", stepRow(runId), [data.insertLabel("stale")])).toEqual({ leaseLost: true });
      expect(await store.runs.saveStep("A", stepRow(runId, { name: "plain" }))).toEqual({ leaseLost: true });
      expect(await store.runs.steps(runId)).toEqual([]);
      expect(await data.labels()).toEqual([]);
      expect(await peer.runs.saveStep("B", stepRow(runId))).toEqual({ saved: true });
    });

    test("data writes the data refuses are answered as a refusal, and nothing of the step is stored", async () => {
      const runId = await claimedRun("A");
      const data = dataWrites(store);
      await store.runs.saveStep("A", stepRow(runId, { name: "first" }), [data.insertLabel("taken")]);

      const gone = await store.runs.saveStep("A", stepRow(runId, { name: "rename" }), [
        data.insertLabel("half"),
        data.renameMissing(),
      ]);
      expect(gone).toEqual({ refused: data.gone });
      const duplicate = await store.runs.saveStep("A", stepRow(runId, { name: "again" }), [data.insertLabel("taken")]);
      expect(duplicate).toEqual({ refused: expect.stringContaining("the writes could not be stored") });

      expect((await store.runs.steps(runId)).map((s) => s.name)).toEqual(["first"]);
      expect(await data.labels()).toEqual(["taken"]);
    });

    test("an attempt's start never replaces the row of the same or a later attempt", async () => {
      const runId = await claimedRun("A");
      const retrying = stepRow(runId, { status: "retrying", attempts: 1, error: "card declined", output: null });
      await store.runs.saveStep("A", retrying);
      const secondStart = stepRow(runId, { status: "running", attempts: 2, output: null, finishedAt: null });
      expect(await store.runs.saveStep("A", secondStart)).toEqual({ saved: true });
      expect(await store.runs.steps(runId)).toEqual([secondStart]);

      const succeeded = stepRow(runId, { attempts: 2 });
      await store.runs.saveStep("A", succeeded);
      expect(await store.runs.saveStep("A", secondStart)).toEqual({ saved: true });
      expect(await store.runs.steps(runId)).toEqual([succeeded]);
    });
  });

  describe("suspend", () => {
    const sleeping = (runId: string) =>
      stepRow(runId, {
        name: "nap",
        kind: "sleep",
        status: "sleeping",
        output: { until: at(60_000) },
        finishedAt: null,
      });

    test("stores the step row, the wake time and the status, and lets the lease go, all at once", async () => {
      const runId = await claimedRun("A");
      const step = sleeping(runId);
      const suspended = await store.runs.suspend("A", runId, {
        status: "sleeping",
        wakeAt: at(60_000),
        step,
        now: at(7),
      });
      expect(suspended).toEqual({ saved: true });
      expect(await store.runs.get(runId)).toMatchObject({
        status: "sleeping",
        wakeAt: at(60_000),
        leaseOwner: null,
        leaseExpiresAt: null,
        updatedAt: at(7),
      });
      expect(await store.runs.steps(runId)).toEqual([step]);
      expect(await store.runs.saveStep("A", stepRow(runId))).toEqual({ leaseLost: true });
      expect(await peer.runs.claim("B", at(59_999), at(59_999 + LEASE), 10)).toEqual([]);
      expect((await peer.runs.claim("B", at(60_000), at(60_000 + LEASE), 10)).map((r) => r.id)).toEqual([runId]);
    });

    test("a worker that lost its lease suspends nothing: no step row, no wake time, the new lease intact", async () => {
      const runId = await claimedRun("A");
      await peer.runs.claim("B", at(LEASE + 1), at(3 * LEASE), 10);
      const suspended = await store.runs.suspend("A", runId, {
        status: "sleeping",
        wakeAt: at(60_000),
        step: sleeping(runId),
        now: at(LEASE + 2),
      });
      expect(suspended).toEqual({ leaseLost: true });
      expect(await store.runs.get(runId)).toMatchObject({ status: "running", wakeAt: T0, leaseOwner: "B" });
      expect(await store.runs.steps(runId)).toEqual([]);
    });

    test("racing a takeover, a suspension happens whole or not at all", async () => {
      for (let i = 0; i < 20; i++) {
        const runId = await claimedRun("A");
        const [suspended, taken] = await Promise.all([
          store.runs.suspend("A", runId, {
            status: "running",
            wakeAt: at(LEASE + 1),
            step: sleeping(runId),
            now: at(5),
          }),
          peer.runs.claim("B", at(LEASE + 1), at(3 * LEASE), 1),
        ]);
        const steps = await store.runs.steps(runId);
        if ("saved" in suspended) expect(steps).toHaveLength(1);
        else expect({ steps, taken: taken.map((r) => r.id) }).toEqual({ steps: [], taken: [runId] });
        await peer.runs.finish("B", runId, { ...done, finishedAt: at(LEASE + 2) });
      }
    });
  });

  describe("finish", () => {
    test("ends the run and its execution together, letting the lease go", async () => {
      const runId = await claimedRun("A");
      expect(await store.runs.finish("A", runId, { ...done, finishedAt: at(9) })).toEqual({ saved: true });
      expect(await store.runs.get(runId)).toMatchObject({
        status: "succeeded",
        output: { shipped: true },
        leaseOwner: null,
        finishedAt: at(9),
        updatedAt: at(9),
      });
      expect(await store.executions.get(runId)).toMatchObject({
        status: "succeeded",
        output: { shipped: true },
        finishedAt: at(9),
      });
      expect(await store.runs.finish("A", runId, { ...done, finishedAt: at(10) })).toEqual({ leaseLost: true });
      expect(await store.runs.claim("A", at(LEASE * 9), at(LEASE * 10), 10)).toEqual([]);
    });

    test("a worker that lost its lease ends nothing", async () => {
      const runId = await claimedRun("A");
      await peer.runs.claim("B", at(LEASE + 1), at(3 * LEASE), 10);
      expect(await store.runs.finish("A", runId, { ...done, finishedAt: at(LEASE + 2) })).toEqual({ leaseLost: true });
      expect(await store.runs.get(runId)).toMatchObject({ status: "running", leaseOwner: "B", finishedAt: null });
      expect(await store.executions.get(runId)).toMatchObject({ status: "running", finishedAt: null });
    });
  });

  describe("requestCancel", () => {
    test("a run no lease holds ends canceled at once, with its execution and its waiting step", async () => {
      const queued = runRows();
      await store.runs.admit(queued.execution, queued.run);
      expect(await peer.runs.requestCancel(queued.run.id, at(3))).toMatchObject({
        status: "canceled",
        cancelRequested: true,
        errorCode: "run_canceled",
        finishedAt: at(3),
      });
      expect(await store.executions.get(queued.run.id)).toMatchObject({
        status: "canceled",
        errorCode: "run_canceled",
        finishedAt: at(3),
        startedAt: at(3),
      });

      const runId = await claimedRun("A");
      const nap = stepRow(runId, { kind: "sleep", status: "sleeping", output: { until: at(9_000) }, finishedAt: null });
      await store.runs.suspend("A", runId, { status: "sleeping", wakeAt: at(9_000), step: nap, now: at(4) });
      expect(await peer.runs.requestCancel(runId, at(5))).toMatchObject({ status: "canceled", finishedAt: at(5) });
      expect(await store.runs.steps(runId)).toEqual([{ ...nap, status: "canceled", finishedAt: at(5) }]);
    });

    test("a held run is flagged for its worker, which ends it; a run whose lease expired is ended at once", async () => {
      const runId = await claimedRun("A");
      expect(await peer.runs.requestCancel(runId, at(LEASE - 1))).toMatchObject({
        status: "running",
        cancelRequested: true,
        leaseOwner: "A",
      });
      expect(await store.executions.get(runId)).toMatchObject({ status: "running" });
      expect(await store.runs.finish("A", runId, runCanceled(at(LEASE - 1)))).toEqual({ saved: true });
      expect(await store.executions.get(runId)).toMatchObject({ status: "canceled", errorCode: "run_canceled" });

      const abandoned = await claimedRun("A");
      expect(await peer.runs.requestCancel(abandoned, at(LEASE + 1))).toMatchObject({ status: "canceled" });
      expect(await store.runs.finish("A", abandoned, { ...done, finishedAt: at(LEASE + 2) })).toEqual({
        leaseLost: true,
      });
    });

    test("an ended run stays as it ended; an unknown id answers null", async () => {
      const runId = await claimedRun("A");
      await store.runs.finish("A", runId, { ...done, finishedAt: at(2) });
      expect(await store.runs.requestCancel(runId, at(3))).toMatchObject({
        status: "succeeded",
        cancelRequested: false,
      });
      expect(await store.runs.requestCancel(Bun.randomUUIDv7(), at(3))).toBeNull();
    });
  });

  describe("release", () => {
    test("lets go of every run the owner holds, so another owner claims them before their leases would expire", async () => {
      const mine = [await claimedRun("A"), await claimedRun("A")];
      const theirs = await claimedRun("C");
      await store.runs.release("A");
      expect(await store.runs.get(theirs)).toMatchObject({ leaseOwner: "C" });
      const claimed = await peer.runs.claim("B", at(1), at(1 + LEASE), 10);
      expect(claimed.map((r) => r.id).sort()).toEqual([...mine].sort());
      expect(await store.runs.saveStep("A", stepRow(mine[0] as string))).toEqual({ leaseLost: true });
    });
  });

  describe("countActive", () => {
    test("counts the runs queued, running and sleeping in the environment; ended runs are not counted", async () => {
      const before = await store.runs.countActive();
      const running = await claimedRun("A");
      const ended = await claimedRun("A");
      const queued = runRows();
      await store.runs.admit(queued.execution, queued.run);
      await store.runs.finish("A", ended, { ...done, finishedAt: at(1) });
      expect(await peer.runs.countActive()).toEqual({
        queued: before.queued + 1,
        running: before.running + 1,
        sleeping: before.sleeping,
      });
      await store.runs.suspend("A", running, {
        status: "sleeping",
        wakeAt: at(60_000),
        step: stepRow(running, { name: "nap", kind: "sleep", status: "sleeping", output: null, finishedAt: null }),
        now: at(1),
      });
      expect(await store.runs.countActive()).toMatchObject({ running: before.running, sleeping: before.sleeping + 1 });
    });
  });

  describe("environments", () => {
    /** The same database seen as environment 2 (no row needed: nothing of a run refers to `environments`). */
    const other = () => store.environment(2);

    test("the same request id in two environments is two runs, each read in its own only", async () => {
      const requestId = crypto.randomUUID();
      const [one, two] = [runRows({ requestId }), runRows({ requestId, now: at(1) })];
      expect((await store.runs.admit(one.execution, one.run)).created).toBe(true);
      expect((await other().runs.admit(two.execution, two.run)).created).toBe(true);

      expect(await store.runs.get(one.run.id)).toEqual(one.run);
      expect(await other().runs.get(two.run.id)).toEqual(two.run);
      expect(await store.runs.get(two.run.id)).toBeNull();
      expect(await peer.environment(2).runs.get(one.run.id)).toBeNull();
    });

    test("a replay of the key in each environment answers that environment's execution", async () => {
      const requestId = crypto.randomUUID();
      const [one, two] = [runRows({ requestId }), runRows({ requestId, now: at(1) })];
      await store.runs.admit(one.execution, one.run);
      await other().runs.admit(two.execution, two.run);
      const replay = runRows({ requestId });
      const inTwo = await peer.environment(2).runs.admit(replay.execution, replay.run);
      expect(inTwo).toEqual({ execution: expect.objectContaining({ id: two.run.id }), created: false });
      const inOne = await peer.runs.admit(replay.execution, replay.run);
      expect(inOne).toEqual({ execution: expect.objectContaining({ id: one.run.id }), created: false });
    });

    test("claims take their environment's runs; renewals and releases by owner span every environment", async () => {
      const [one, two] = [runRows(), runRows({ now: at(1) })];
      await store.runs.admit(one.execution, one.run);
      await other().runs.admit(two.execution, two.run);
      const leased = { status: "running" as const, leaseOwner: "A", leaseExpiresAt: at(2 + LEASE), updatedAt: at(2) };
      expect(await peer.runs.claim("A", at(2), at(2 + LEASE), 10)).toEqual([{ ...one.run, ...leased, environment: 1 }]);
      expect(await peer.environment(2).runs.claim("A", at(2), at(2 + LEASE), 10)).toEqual([
        { ...two.run, ...leased, environment: 2 },
      ]);
      expect(await other().runs.get(two.run.id)).toEqual({ ...two.run, ...leased });

      const renewed = await store.runs.renew("A", [one.run.id, two.run.id], at(3 + LEASE));
      expect(renewed.map((r) => r.id).sort()).toEqual([one.run.id, two.run.id].sort());
      await other().runs.release("A");
      const taken = await peer.environment(2).runs.claim("B", at(4), at(4 + LEASE), 10);
      expect(taken.map((r) => [r.id, r.environment])).toEqual([[two.run.id, 2]]);
      expect((await peer.runs.claim("B", at(4), at(4 + LEASE), 10)).map((r) => r.id)).toEqual([one.run.id]);
    });

    test("a worker's fenced writes count only in the run's own environment", async () => {
      const runId = await claimedRun("A");
      const elsewhere = other().runs;
      expect(await elsewhere.saveStep("A", stepRow(runId))).toEqual({ leaseLost: true });
      const nap = stepRow(runId, { name: "nap", kind: "sleep", status: "sleeping", finishedAt: null });
      expect(await elsewhere.suspend("A", runId, { status: "sleeping", wakeAt: at(9), step: nap, now: at(1) })).toEqual(
        { leaseLost: true },
      );
      expect(await elsewhere.finish("A", runId, { ...done, finishedAt: at(2) })).toEqual({ leaseLost: true });
      expect(await store.runs.get(runId)).toMatchObject({ status: "running", leaseOwner: "A", wakeAt: T0 });
      expect(await store.runs.steps(runId)).toEqual([]);

      expect(await store.runs.saveStep("A", stepRow(runId))).toEqual({ saved: true });
      expect(await elsewhere.steps(runId)).toEqual([]);
      expect(await store.runs.finish("A", runId, { ...done, finishedAt: at(3) })).toEqual({ saved: true });
      expect(await store.runs.get(runId)).toMatchObject({ status: "succeeded", finishedAt: at(3) });
    });

    test("a cancel by id from another environment finds nothing and changes nothing", async () => {
      const held = await claimedRun("A");
      const queued = runRows();
      await store.runs.admit(queued.execution, queued.run);
      expect(await other().runs.requestCancel(queued.run.id, at(3))).toBeNull();
      expect(await other().runs.requestCancel(held, at(LEASE + 1))).toBeNull();
      expect(await store.runs.get(queued.run.id)).toEqual(queued.run);
      expect(await store.runs.get(held)).toMatchObject({ status: "running", cancelRequested: false });
      expect(await store.executions.get(queued.run.id)).toMatchObject({ status: "queued", finishedAt: null });
    });

    test("lists, bounded reads and counts of one environment never answer another's runs", async () => {
      const runId = await claimedRun("A");
      await store.runs.saveStep("A", stepRow(runId));
      const two = runRows({ now: at(1) });
      await other().runs.admit(two.execution, two.run);
      const elsewhere = other().runs;
      expect((await elsewhere.list({ limit: 10, maxValueBytes: 4096 })).map((r) => r.id)).toEqual([two.run.id]);
      expect((await store.runs.list({ limit: 10, maxValueBytes: 4096 })).map((r) => r.id)).toEqual([runId]);
      expect(await elsewhere.getBounded(runId, 4096)).toBeNull();
      expect(await elsewhere.getManyBounded([runId, two.run.id], 4096)).toMatchObject([{ id: two.run.id }]);
      expect(await elsewhere.boundedSteps(runId, 4096)).toEqual([]);
      expect(await elsewhere.countActive()).toEqual({ queued: 1, running: 0, sleeping: 0 });
      expect(await store.runs.countActive()).toEqual({ queued: 0, running: 1, sleeping: 0 });
    });

    test("a step's data writes land in its run's environment", async () => {
      const runId = await claimedRun("A");
      const two = runRows({ now: at(1) });
      await other().runs.admit(two.execution, two.run);
      await other().runs.claim("A", at(1), at(1 + LEASE), 10);
      // The same entity id in both: a second write to the same environment would break its primary key.
      const paid = dataWrites(store).insertLabel("paid");
      expect(await store.runs.saveStep("A", stepRow(runId), [paid])).toEqual({ saved: true });
      expect(await other().runs.saveStep("A", stepRow(two.run.id), [paid])).toEqual({ saved: true });
      expect(await other().runs.saveStep("A", stepRow(two.run.id, { name: "again" }), [paid])).toEqual({
        refused: expect.stringContaining("the writes could not be stored"),
      });
    });
  });
}
