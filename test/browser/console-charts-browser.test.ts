import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { axeViolations, consoleSignedIn, launchChromium } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;
const SUCCEEDED = 3;
const FAILED = 2;

// The overview's and an action's charts over the workflows fixture: wf.steps succeeds, wf.flaky with more
// failures than retries fails; each chart's numbers are compared with a count of the database's rows.
describe("the console's charts and run timeline in Chromium", () => {
  let t: TestServer;
  let browser: Browser;
  let db: Database;
  const runs: { steps: string[]; flaky: string[]; nap: string } = { steps: [], flaky: [], nap: "" };

  const started = async (action: string, input: unknown) => {
    const res = await t.invoke(action, input);
    expect(res.status).toBe(202);
    return ((await res.json()) as { runId: string }).runId;
  };
  const ended = (id: string) =>
    eventually(
      async () => ((await (await t.fetch(`/runs/${id}`)).json()) as { finishedAt: string | null }).finishedAt,
      15_000,
    );

  /** The database's own count of executions by status (of one action, or all). */
  const counted = (action?: string) => {
    const rows = db
      .query<{ status: string; n: number }, string[]>(
        `select status, count(*) as n from executions${action ? " where action = ?" : ""} group by status`,
      )
      .all(...(action ? [action] : []));
    return Object.fromEntries(rows.map((r) => [r.status, r.n])) as Record<string, number>;
  };

  beforeAll(async () => {
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("workflows") });
    for (let i = 0; i < SUCCEEDED; i++) runs.steps.push(await started("wf.steps", { n: i }));
    for (let i = 0; i < FAILED; i++)
      runs.flaky.push(await started("wf.flaky", { failures: 5, retries: 1, backoffMs: 20 }));
    runs.nap = await started("wf.nap", { ms: 200 });
    await Promise.all([...runs.steps, ...runs.flaky, runs.nap].map(ended));
    db = new Database(t.config.databaseUrl.replace(/^sqlite:/, ""), { readonly: true });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    db?.close();
    await browser?.close();
    await t?.stop();
  });

  const attribute = async (page: Page, testId: string, name: string) =>
    Number(await page.getByTestId(testId).getAttribute(name));

  test("the overview's charts are drawn from the series the database holds, uPlot loaded apart", async () => {
    const errors: string[] = [];
    const page = await consoleSignedIn(browser, t.url, t.serviceKey, errors);
    await page.locator('[data-testid="executions-chart"] canvas').first().waitFor();
    // uPlot came apart from the console's bundle, for the charts (a string: the test's own types have no DOM).
    const loaded = await page.evaluate<string[]>(
      'performance.getEntriesByType("resource").map((e) => new URL(e.name).pathname).filter((p) => p.endsWith(".js"))',
    );
    expect(loaded).toHaveLength(2);
    expect(loaded).toContain("/chunk-uplot1632.js");
    await page.locator('[data-testid="failure-chart"] canvas').first().waitFor();

    const stored = counted();
    expect(stored.succeeded).toBe(SUCCEEDED + 1); // wf.nap succeeds too
    expect(stored.failed).toBe(FAILED);
    for (const status of ["queued", "running", "succeeded", "failed", "canceled"])
      expect(await attribute(page, "executions-chart", `data-total-${status}`)).toBe(stored[status] ?? 0);

    // The accessible table holds the same numbers the chart drew.
    await page.getByText("The numbers").click();
    // Columns: the bucket's start, then queued, running, succeeded, failed.
    const failedCells = await page.getByTestId("series-table").locator("tbody td:nth-child(5)").allTextContents();
    const failedColumn = failedCells.reduce((n, cell) => n + Number(cell), 0);
    expect(failedColumn).toBe(FAILED);

    // A day's span reads the series again, in 15-minute buckets.
    await page.getByRole("button", { name: "Last day" }).click();
    await page.getByRole("button", { name: "Last day", pressed: true }).waitFor();
    await eventually(async () => (await attribute(page, "executions-chart", "data-total-failed")) === FAILED);
    expect(await axeViolations(page)).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("an action's page charts its durations and throughput; its form shows units", async () => {
    const errors: string[] = [];
    const page = await consoleSignedIn(browser, t.url, t.serviceKey, errors);
    await page.goto(`${t.url}/console#/actions/wf.flaky`);
    await page.locator('[data-testid="duration-chart"] canvas').first().waitFor();
    await page.locator('[data-testid="throughput-chart"] canvas').first().waitFor();
    const stored = counted("wf.flaky");
    expect(await attribute(page, "throughput-chart", "data-total")).toBe(stored.failed ?? -1);
    // A numeric field named …Ms says its unit, and the input names it as its description.
    const backoff = page.getByLabel("backoffMs", { exact: true });
    expect(await page.locator(`#${await backoff.getAttribute("aria-describedby")}`).textContent()).toContain("ms");
    expect(await axeViolations(page)).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("a run's timeline shows each step, its retries and its sleep, with a table saying the same", async () => {
    const errors: string[] = [];
    const page = await consoleSignedIn(browser, t.url, t.serviceKey, errors);
    await page.goto(`${t.url}/console#/runs/${runs.nap}`);
    const timeline = page.getByTestId("run-timeline");
    await timeline.waitFor();
    for (const step of ["before", "pause", "after"])
      expect(await timeline.getByTestId(`timeline-${step}`).getAttribute("data-status")).toBe("succeeded");
    expect(await timeline.getByTestId("timeline-pause").locator("title").first().textContent()).toContain("waits");
    expect(await page.getByTestId("timeline-table").locator("tbody th").allTextContents()).toEqual([
      "before",
      "pause",
      "after",
    ]);

    await page.goto(`${t.url}/console#/runs/${runs.flaky[0]}`);
    await page.locator('[data-testid="timeline-call"][data-status="failed"]').waitFor();
    expect(await page.getByTestId("timeline-table").textContent()).toContain("2 attempts");
    expect(await axeViolations(page)).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
