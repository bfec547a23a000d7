import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { bundlesDir } from "../../src/main.ts";
import { publishRelease } from "../../src/release/publish.ts";
import { consoleSignedIn, DESKTOP, launchChromium, PHONE, SCREENSHOTS } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;

// The Runs and Overview pages over the workflows fixture: wf.gated waits in its "wait" step until a file
// the test writes exists, so the test decides when the run goes on.
describe("the console's Runs and Overview pages in Chromium", () => {
  let t: TestServer;
  let browser: Browser;
  let scratch: string;
  let ana: string;
  const file = (name: string) => join(scratch, `${name}-${crypto.randomUUID()}`);

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), "actuate-console-runs-"));
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("workflows") });
    ana = await t.userToken("ana");
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  const signedIn = (credential: string, errors: string[], viewport = DESKTOP): Promise<Page> =>
    consoleSignedIn(browser, t.url, credential, errors, viewport);

  const startGated = async (gate: string) => {
    const res = await t.invoke("wf.gated", { gate, log: file("log") }, { token: ana });
    expect(res.status).toBe(202);
    return ((await res.json()) as { runId: string }).runId;
  };

  const runOf = async (id: string) => (await t.fetch(`/runs/${id}`)).json();

  /** Nothing wider than the viewport: the page reads without sideways scrolling. */
  // A string: the test's own types have no DOM.
  const fitsWidth = (page: Page) => page.evaluate<boolean>("document.documentElement.scrollWidth <= window.innerWidth");

  test("a run's steps appear as it reaches them; another is canceled from its page", async () => {
    const errors: string[] = [];
    const page = await signedIn(ana, errors);
    // The overview is the page after signing in.
    await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();

    const gate = file("gate");
    const runId = await startGated(gate);
    await page.getByRole("link", { name: "Runs", exact: true }).click();
    const table = page.getByRole("table", { name: "Runs" });
    await table.getByRole("link", { name: runId }).click();
    await page.getByRole("heading", { name: `Run ${runId}` }).waitFor();

    // Held at the gate: the first step is done, the second is running, the last not reached.
    await page.locator('[data-testid="step-first"][data-status="succeeded"]').waitFor();
    await page.locator('[data-testid="step-wait"][data-status="running"]').waitFor();
    expect(await page.getByTestId("step-last").count()).toBe(0);
    expect(await page.getByTestId("run-status").textContent()).toBe("running");
    await page.screenshot({ path: join(SCREENSHOTS, "run.png"), fullPage: true });

    // The test opens the gate; the page follows without a reload.
    writeFileSync(gate, "");
    await page.locator('[data-testid="step-wait"][data-status="succeeded"]').waitFor();
    await page.locator('[data-testid="step-last"][data-status="succeeded"]').waitFor();
    await page.getByTestId("run-status").filter({ hasText: "succeeded" }).waitFor();
    expect(JSON.parse((await page.getByTestId("run-output").textContent()) ?? "")).toEqual({ done: true });
    expect(await page.getByRole("button", { name: "Cancel run" }).count()).toBe(0);
    expect((await page.getByRole("listitem").filter({ hasText: "1 attempt" }).count()) >= 3).toBe(true);

    // Another run, canceled with the keyboard while its step waits at a gate nobody opens.
    const held = await startGated(file("never"));
    await page.goto(`${t.url}/console#/runs/${held}`);
    await page.locator('[data-testid="step-wait"][data-status="running"]').waitFor();
    page.once("dialog", (dialog) => dialog.accept());
    await page.getByRole("button", { name: "Cancel run" }).focus();
    await page.keyboard.press("Enter");
    await page
      .getByRole("status")
      .filter({ hasText: /cancel/i })
      .waitFor();
    await page.getByTestId("run-status").filter({ hasText: "canceled" }).waitFor();
    await page.locator('[data-testid="step-wait"][data-status="canceled"]').waitFor();
    expect((await runOf(held)).status).toBe("canceled");

    // The list, filtered by status.
    await page.getByRole("link", { name: "← Runs" }).click();
    await table.getByRole("link", { name: held }).waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, "runs.png"), fullPage: true });
    await page.getByLabel("Status").selectOption("canceled");
    await eventually(async () => (await table.getByRole("link").count()) === 1, 10_000);
    await table.getByRole("link", { name: held }).waitFor();
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  test("the overview counts executions, names the failing action, lists runs in progress; a user sees their own", async () => {
    const failing = await (
      await t.invoke("wf.flaky", { failures: 5, retries: 0, backoffMs: 0 }, { token: ana })
    ).json();
    await eventually(async () => (await runOf(failing.runId)).status === "failed", 15_000);
    const napping = await (await t.invoke("wf.nap", { ms: 3_600_000 }, { token: ana })).json();
    await eventually(async () => (await runOf(napping.runId)).status === "sleeping", 15_000);

    // The same workflows again as w1b, published by someone who says who they are.
    await publishRelease({
      store: t.store,
      bundlesDir: bundlesDir(t.config),
      dir: fixture("workflows"),
      version: "w1b",
      whenTaken: "refuse",
      publishedBy: "ana@laptop",
    });
    await eventually(() => t.server.releases.current()?.version === "w1b");

    const errors: string[] = [];
    const page = await signedIn(t.serviceKey, errors);
    await page.getByTestId("active-version").filter({ hasText: "w1b" }).waitFor();
    expect(await page.getByTestId("published-by").textContent()).toBe("ana@laptop");
    const failingActions = page.getByRole("table", { name: "Failing actions" });
    const flakyRow = failingActions.getByRole("row").filter({ has: page.getByRole("link", { name: "wf.flaky" }) });
    await flakyRow.getByRole("cell", { name: "1", exact: true }).waitFor();
    expect(await page.getByTestId("count-failed").textContent()).toContain("1");
    const inProgress = page.getByRole("region", { name: "Runs in progress" });
    await inProgress.getByRole("link", { name: "wf.nap" }).waitFor();
    await page.getByTestId("active-runs").filter({ hasText: "1 sleeping" }).waitFor();
    expect(Number(await page.getByTestId("live-sockets").textContent())).toBeGreaterThanOrEqual(0);
    await page.screenshot({ path: join(SCREENSHOTS, "overview.png"), fullPage: true });

    // Live: a new failure is counted without a reload.
    await t.invoke("wf.flaky", { failures: 5, retries: 0, backoffMs: 0 }, { token: ana });
    await flakyRow.getByRole("cell", { name: "2", exact: true }).waitFor({ timeout: 20_000 });

    // The sleeping run's page says when its sleep ends.
    await inProgress.getByRole("link", { name: "wf.nap" }).click();
    const pause = page.locator('[data-testid="step-pause"][data-status="sleeping"]');
    await pause.filter({ hasText: /wakes .* \(in (59|60) min/ }).waitFor();
    expect(errors).toEqual([]);
    await page.close();

    // A user cannot read /stats: the page counts their own, and says so (no error, no blank page).
    const anaErrors: string[] = [];
    const own = await signedIn(ana, anaErrors);
    await own.getByTestId("own-figures").waitFor();
    await own.getByRole("table", { name: "Failing actions" }).getByRole("link", { name: "wf.flaky" }).waitFor();
    await own.getByRole("region", { name: "Runs in progress" }).getByRole("link", { name: "wf.nap" }).waitFor();
    expect(await own.getByRole("alert").count()).toBe(0);
    expect(await own.getByTestId("active-version").count()).toBe(0);
    expect(anaErrors).toEqual([]);
    await own.close();
  }, 90_000);

  test("another user sees none of ana's runs, in the list, the overview or by id", async () => {
    const runId = await startGated(file("never"));
    const errors: string[] = [];
    const ben = await signedIn(await t.userToken("ben"), errors);
    await ben.getByTestId("own-figures").waitFor();
    await ben.getByText("Nothing failed in the last hour.").waitFor();
    await ben.getByText("No run in progress.").waitFor();
    await ben.getByRole("link", { name: "Runs", exact: true }).click();
    await ben.getByText("No runs yet.").waitFor();
    expect(await ben.getByRole("table", { name: "Runs" }).getByRole("link").count()).toBe(0);
    await ben.goto(`${t.url}/console#/runs/${runId}`);
    await ben.getByRole("alert").filter({ hasText: "no such workflow run" }).waitFor();
    expect(await ben.getByRole("button", { name: "Cancel run" }).count()).toBe(0);
    expect(errors).toEqual([]);
    await ben.close();
    await t.fetch(`/runs/${runId}/cancel`, { method: "POST" });
  }, 60_000);

  test("on a phone: the overview and a run's timeline fit the width", async () => {
    const errors: string[] = [];
    const page = await signedIn(t.serviceKey, errors, PHONE);
    await page.getByTestId("active-version").waitFor();
    expect(await fitsWidth(page)).toBe(true);
    const listed = await (await t.fetch("/runs?status=succeeded&limit=1")).json();
    await page.goto(`${t.url}/console#/runs/${listed.items[0].id}`);
    await page.locator('[data-testid="step-last"][data-status="succeeded"]').waitFor();
    expect(await fitsWidth(page)).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
