import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Request } from "playwright-core";
import { openGate } from "../fixtures/releases/basic/lib/probe.ts";
import { consoleSignedIn, launchChromium } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;

/** A read of the executions list (`GET /executions`, `?…`), not of one execution (`/executions/<id>`). */
const listsExecutions = (request: Request) => {
  const url = new URL(request.url());
  return request.method() === "GET" && url.pathname === "/executions";
};

// The executions list is kept current over the session socket (subscribe-executions), not by polling.
describe("the console's live executions list in Chromium", () => {
  let t: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    t = await startTestServer(sqlite as (typeof dialects)[number], {
      release: fixture("basic"),
      env: { WAIT_MS: "100" },
    });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  test("a new execution invoked over HTTP appears, then its end, with no list read after the first", async () => {
    const errors: string[] = [];
    const page = await consoleSignedIn(browser, t.url, t.serviceKey, errors);
    const reads: string[] = [];
    page.on("request", (request) => {
      if (listsExecutions(request)) reads.push(request.url());
    });
    await page.getByRole("link", { name: "Executions", exact: true }).click();
    const table = page.getByRole("table", { name: "Executions" });
    await table.waitFor();
    await page.getByText("No executions yet.").waitFor();
    expect(reads).toHaveLength(1);

    const gate = crypto.randomUUID();
    const answer = await t.invoke("test.count", { key: crypto.randomUUID(), gate });
    expect(answer.status).toBe(202);
    const { id } = (await answer.json()).execution;
    // Rows show ids short; the whole id is each id's title.
    const row = table.getByRole("row").filter({ has: page.locator(`[title="${id}"]`) });
    await row.getByRole("cell", { name: "running", exact: true }).waitFor();
    openGate(gate);
    await row.getByRole("cell", { name: "succeeded", exact: true }).waitFor();
    const echoed = (await (await t.invoke("test.echo", { text: "hi" })).json()).execution.id;
    await table
      .getByRole("row")
      .filter({ has: page.locator(`[title="${echoed}"]`) })
      .waitFor();
    // Newest on top.
    expect(await table.getByRole("row").nth(1).locator(`[title="${echoed}"]`).count()).toBe(1);
    expect(reads).toHaveLength(1);
    expect(errors).toEqual([]);
  }, 30_000);

  test("a list filtered to running shows a row while it runs and drops it when it ends, with one list read", async () => {
    const errors: string[] = [];
    const page = await consoleSignedIn(browser, t.url, t.serviceKey, errors);
    const reads: string[] = [];
    page.on("request", (request) => {
      if (listsExecutions(request)) reads.push(request.url());
    });
    await page.goto(`${t.url}/console#/executions?status=running`);
    const table = page.getByRole("table", { name: "Executions" });
    await page.getByText("No execution matches these filters.").waitFor();
    expect(reads).toHaveLength(1);
    expect(new URL(reads[0] as string).searchParams.get("status")).toBe("running");

    const gate = crypto.randomUUID();
    const { id } = (await (await t.invoke("test.count", { key: crypto.randomUUID(), gate })).json()).execution;
    const row = table.getByRole("row").filter({ has: page.locator(`[title="${id}"]`) });
    await row.getByRole("cell", { name: "running", exact: true }).waitFor();
    openGate(gate);
    await row.waitFor({ state: "detached" });
    expect(reads).toHaveLength(1);
    expect(errors).toEqual([]);
    await page.close();
  }, 30_000);

  test("the overview's figures move when an execution ends, before its poll is due", async () => {
    const page = await browser.newPage();
    // The page's timers run only as the test moves them: its 5 s poll cannot be what moves the figures.
    await page.clock.install();
    await page.goto(`${t.url}/console`);
    await page.getByLabel("Token or service key").fill(t.serviceKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    const succeeded = page.getByTestId("count-succeeded").locator(".count");
    await succeeded.waitFor();
    const before = Number(await succeeded.textContent());
    expect(Number.isInteger(before)).toBe(true);
    await t.invoke("test.echo", { text: "counted" });
    // The push arrives over the socket; the refresh it asks for waits at most a second of the page's clock.
    // Real time for the socket, the page's clock moved 50 ms a step: at most 1.5 s of it, far from the 5 s poll.
    for (let step = 0; step < 30 && Number(await succeeded.textContent()) === before; step++) {
      await Bun.sleep(100);
      await page.clock.runFor(50);
    }
    expect(Number(await succeeded.textContent())).toBe(before + 1);
    await page.close();
  }, 30_000);
});
