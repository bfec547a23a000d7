import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dialects } from "../support/databases.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

interface StepView {
  name: string;
  kind: string;
  status: string;
  attempts: number;
  error: string | null;
  startedAt: string | null;
  wakeAt: string | null;
}

// What a run's timeline reads beyond a step's status and times: when a waiting step goes on (docs/API.md).
for (const dialect of dialects) {
  describe(`a run's step timeline (${dialect.name})`, () => {
    let t: TestServer;
    let alice: string;
    let bob: string;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("workflows") });
      alice = await t.userToken("alice");
      bob = await t.userToken("bob");
    });
    afterAll(() => t.stop());

    const stepOf = async (runId: string, name: string, status: string, token = alice) =>
      eventually<StepView | undefined>(async () => {
        const res = await t.fetch(`/runs/${runId}`, { token });
        expect(res.status).toBe(200);
        const run = (await res.json()) as { steps: StepView[] };
        return run.steps.find((s) => s.name === name && s.status === status);
      }, 15_000) as Promise<StepView>;

    test("a sleeping step says when it ends, a retrying one when it tries again; an ended step says null; only its caller and service keys see it", async () => {
      const napping = await (await t.invoke("wf.nap", { ms: 3_600_000 }, { token: alice })).json();
      const sleeping = await stepOf(napping.runId, "pause", "sleeping");
      expect(sleeping.kind).toBe("sleep");
      expect(Date.parse(sleeping.wakeAt ?? "") - Date.parse(sleeping.startedAt ?? "")).toBe(3_600_000);
      const before = await stepOf(napping.runId, "before", "succeeded");
      expect(before.wakeAt).toBeNull();

      const flaky = await (
        await t.invoke("wf.flaky", { failures: 5, retries: 3, backoffMs: 3_600_000 }, { token: alice })
      ).json();
      const retrying = await stepOf(flaky.runId, "call", "retrying");
      expect(retrying).toMatchObject({ attempts: 1, error: "attempt 1 failed" });
      // The first backoff is backoffMs, counted from the failed attempt's end.
      const wait = Date.parse(retrying.wakeAt ?? "") - Date.parse(retrying.startedAt ?? "");
      expect(wait).toBeGreaterThanOrEqual(3_600_000);
      expect(wait).toBeLessThan(3_600_000 + 60_000);

      // A service key sees the same; another user, nothing; no credential, 401.
      expect((await stepOf(flaky.runId, "call", "retrying", t.serviceKey)).wakeAt).toBe(retrying.wakeAt);
      for (const id of [napping.runId, flaky.runId]) {
        const other = await t.fetch(`/runs/${id}`, { token: bob });
        expect(other.status).toBe(404);
        expect(await other.json()).toMatchObject({ ok: false, error: "run_not_found" });
        expect((await t.fetch(`/runs/${id}`, { token: null })).status).toBe(401);
      }

      // Canceled, neither waits any more.
      for (const id of [napping.runId, flaky.runId]) {
        const canceled = await t.fetch(`/runs/${id}/cancel`, { method: "POST", token: alice });
        expect(canceled.status).toBe(200);
        const run = (await canceled.json()) as { status: string; steps: StepView[] };
        expect(run.status).toBe("canceled");
        expect(run.steps.map((s) => s.wakeAt)).toEqual(run.steps.map(() => null));
      }
    }, 60_000);
  });
}
