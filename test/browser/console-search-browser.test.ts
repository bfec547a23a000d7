import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { axeViolations, consoleSignedIn, launchChromium } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;

// The header's search, the keyboard, filters carried by the address, and the invoke form's own checks:
// the workflows fixture for runs and failures, console-v1 for an action whose input has limits.
describe("the console's search, keyboard and addresses in Chromium", () => {
  let t: TestServer;
  let shop: TestServer;
  let browser: Browser;
  let ana: string;
  const requestId = crypto.randomUUID();
  let requested = "";
  let runId = "";
  const flaky: string[] = [];

  const started = async (action: string, input: unknown, options: { requestId?: string; token?: string } = {}) => {
    const res = await t.invoke(action, input, options);
    expect(res.status).toBe(202);
    return ((await res.json()) as { runId: string }).runId;
  };
  const ended = (id: string) =>
    eventually(
      async () => ((await (await t.fetch(`/runs/${id}`)).json()) as { finishedAt: string | null }).finishedAt,
      15_000,
    );

  beforeAll(async () => {
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("workflows") });
    shop = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("console-v1") });
    ana = await t.userToken("ana");
    runId = await started("wf.steps", { n: 1 }, { token: ana });
    requested = await started("wf.steps", { n: 2 }, { requestId });
    for (let i = 0; i < 2; i++) flaky.push(await started("wf.flaky", { failures: 3, retries: 0, backoffMs: 10 }));
    await Promise.all([runId, requested, ...flaky].map(ended));
    const upload = await t.fetch("/storage/upload", {
      method: "PUT",
      headers: { path: "reports/q1.txt", "content-type": "text/plain" },
      body: "numbers",
    });
    expect(upload.status).toBe(200);
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
    await shop?.stop();
  });

  const searched = async (page: Page, text: string) => {
    await page.evaluate("document.activeElement?.blur()");
    await page.keyboard.press("/");
    expect(await page.evaluate<string>("document.activeElement.id")).toBe("search-box");
    await page.keyboard.type(text);
    const results = page.getByRole("list", { name: "Search results" });
    await results.waitFor();
    return results;
  };

  test("search finds an execution, a run, a request, an action, a file and a caller", async () => {
    const errors: string[] = [];
    const page = await consoleSignedIn(browser, t.url, t.serviceKey, errors);

    let results = await searched(page, runId);
    await results.getByText("execution").waitFor();
    await results.getByText("run", { exact: true }).waitFor();
    expect(await results.getByRole("link").first().getAttribute("href")).toBe(`#/executions/${runId}`);
    await page.getByLabel("Search", { exact: true }).fill("");

    results = await searched(page, requestId);
    await results.getByText("request", { exact: true }).waitFor();
    expect(await results.getByRole("link").getAttribute("href")).toBe(`#/executions/${requested}`);
    await page.getByLabel("Search", { exact: true }).fill("");

    results = await searched(page, "flak");
    await results.getByRole("link", { name: "wf.flaky" }).waitFor();
    await page.getByLabel("Search", { exact: true }).fill("");

    results = await searched(page, "reports/");
    await results.getByRole("link", { name: "reports/q1.txt" }).click();
    await page.getByRole("table", { name: "Files" }).getByText("reports/q1.txt").waitFor();
    expect(new URL(page.url()).hash).toBe("#/files?prefix=reports%2Fq1.txt");

    results = await searched(page, "user:ana");
    // Enter opens the selected result: the caller's executions.
    await results.getByRole("link", { name: "user:ana's executions" }).waitFor();
    await page.keyboard.press("Enter");
    await page.getByRole("table", { name: "Executions" }).getByRole("link", { name: runId }).waitFor();
    expect(await page.getByLabel("Caller").inputValue()).toBe("user:ana");
    expect(await axeViolations(page)).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("j and k move through a list, Enter opens the row; a filtered address shows the same in a new tab", async () => {
    const errors: string[] = [];
    const page = await consoleSignedIn(browser, t.url, t.serviceKey, errors);
    await page.goto(`${t.url}/console#/executions`);
    const rows = page.getByRole("table", { name: "Executions" }).locator("tbody tr");
    await eventually(async () => (await rows.count()) === 4);
    await page.locator("h1").click();
    await page.keyboard.press("j");
    await page.keyboard.press("j");
    await page.keyboard.press("k");
    await page.keyboard.press("j");
    const selected = page.locator('tbody tr[data-selected="true"]');
    expect(await selected.count()).toBe(1);
    // A link shows an id short; its title holds the whole id.
    const second = (await rows.nth(1).getByRole("link").getAttribute("title")) ?? "";
    expect(await selected.getByRole("link").getAttribute("title")).toBe(second);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: new RegExp(second) }).waitFor();
    expect(new URL(page.url()).hash).toBe(`#/executions/${second}`);

    // The overview's failing action links to its failed executions, filtered by the address.
    await page.getByRole("link", { name: "Overview", exact: true }).click();
    await page.getByRole("table", { name: "Failing actions" }).getByRole("link", { name: "wf.flaky" }).click();
    await eventually(async () => (await rows.count()) === flaky.length);
    const filtered = page.url();
    expect(new URL(filtered).hash).toBe("#/executions?action=wf.flaky&status=failed");

    // The same address in another tab (its own sign-in): the same filter and the same rows.
    const other = await consoleSignedIn(browser, t.url, t.serviceKey, errors);
    await other.goto(filtered);
    const otherRows = other.getByRole("table", { name: "Executions" }).locator("tbody tr");
    await eventually(async () => (await otherRows.count()) === flaky.length);
    expect(await other.getByLabel("Action").inputValue()).toBe("wf.flaky");
    expect(await other.getByLabel("Status").inputValue()).toBe("failed");
    expect((await otherRows.allTextContents()).every((r) => r.includes("wf.flaky") && r.includes("failed"))).toBe(true);

    // The runs list's filter is in the address too, and back undoes it.
    await other.goto(`${t.url}/console#/runs`);
    await other.getByLabel("Status").selectOption("failed");
    await eventually(() => new URL(other.url()).hash === "#/runs?status=failed");
    const runRows = other.getByRole("table", { name: "Runs" }).locator("tbody tr");
    await eventually(async () => (await runRows.count()) === flaky.length);
    await other.goBack();
    await eventually(async () => (await runRows.count()) === 4);
    expect(await other.getByLabel("Status").inputValue()).toBe("");
    await other.goForward();
    await eventually(async () => (await runRows.count()) === flaky.length);
    expect(errors).toEqual([]);
    await other.close();
    await page.close();
  }, 60_000);

  test("the invoke form refuses values out of the schema's range before sending, each message by its field", async () => {
    const errors: string[] = [];
    const page = await consoleSignedIn(browser, shop.url, shop.serviceKey, errors);
    const invokes: string[] = [];
    page.on("request", (r) => {
      if (r.url().includes("/invoke")) invokes.push(r.url());
    });
    await page.goto(`${shop.url}/console#/actions/shop.order`);
    const item = page.getByLabel("item", { exact: true });
    const quantity = page.getByLabel("quantity (optional)");
    await quantity.fill("0");
    await page.getByRole("button", { name: "Run shop.order" }).click();
    const itemMessage = page.locator(`#${(await item.getAttribute("aria-describedby"))?.split(" ")[0]}`);
    expect(await itemMessage.textContent()).toBe("Required.");
    expect(await quantity.getAttribute("aria-invalid")).toBe("true");
    expect(await page.locator(`#${await quantity.getAttribute("aria-describedby")}`).textContent()).toBe("At least 1.");
    await page.getByRole("alert").getByText("2 fields to correct before sending.").waitFor();
    expect(invokes).toEqual([]);
    expect(await axeViolations(page)).toEqual([]);

    // Corrected, it is sent.
    await item.fill("tea");
    await quantity.fill("2");
    expect(await quantity.getAttribute("aria-invalid")).toBeNull();
    await page.getByRole("button", { name: "Run shop.order" }).click();
    await page.getByTestId("output").waitFor();
    expect(invokes).toHaveLength(1);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
