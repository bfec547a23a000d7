import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { consoleSignedIn, launchChromium, SCREENSHOTS } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;

describe("the console (/console) in Chromium", () => {
  let t: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("basic") });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  const signedIn = (credential: string, errors: string[]): Promise<Page> =>
    consoleSignedIn(browser, t.url, credential, errors);

  test("GET / redirects to the console; a wrong credential is refused and nothing is kept", async () => {
    const errors: string[] = [];
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.on("pageerror", (error) => errors.push(error.message));
    await page.goto(t.url);
    expect(new URL(page.url()).pathname).toBe("/console");
    await page.getByRole("heading", { name: "Sign in to the Actuate console" }).waitFor();
    await page.getByLabel("Token or service key").fill("act_u_not-a-token");
    await page.keyboard.press("Enter");
    await page
      .getByRole("alert")
      .filter({ hasText: /credential|unauthori[sz]ed/i })
      .waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("a user signs in, runs an action through the generated form and finds the execution, with its logs", async () => {
    const token = await t.userToken("ana");
    const errors: string[] = [];
    const page = await signedIn(token, errors);
    // Kept for the tab, never put in the URL.
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([token]);
    expect(page.url()).not.toContain(token);

    // Signing in opens the overview (test/browser/console-runs-browser.test.ts); the actions are a link away.
    await page.getByRole("link", { name: "Actions", exact: true }).click();
    await page.getByRole("link", { name: "test.echo" }).click();
    await page.getByRole("heading", { name: "test.echo" }).waitFor();
    await page.getByLabel("text", { exact: true }).fill("from the console");
    await page.getByLabel("n (optional)").fill("3");
    await page.getByRole("button", { name: "Run test.echo" }).click();
    const output = page.getByTestId("output");
    await output.waitFor();
    expect(JSON.parse((await output.textContent()) ?? "")).toEqual({ text: "from the console", n: 3 });
    await page.screenshot({ path: join(SCREENSHOTS, "actions.png"), fullPage: true });

    // The server recorded exactly that input, as ana's.
    const listed = await (await t.fetch("/executions?action=test.echo", { token })).json();
    expect(listed.items).toHaveLength(1);
    expect(listed.items[0]).toMatchObject({
      input: { text: "from the console", n: 3 },
      principal: { kind: "user", id: "ana" },
    });
    const echoId: string = listed.items[0].id;

    // An optional field left empty is left out; the logs of a failing run are shown.
    await page.getByRole("link", { name: "test.logs" }).click();
    await page.getByLabel("lines", { exact: true }).fill("4");
    await page.getByLabel("fail (optional)").fill("on purpose");
    await page.getByRole("button", { name: "Run test.logs" }).click();
    await page.getByRole("alert").filter({ hasText: "on purpose" }).waitFor();
    await page.getByRole("region", { name: "Outcome" }).getByRole("link").click();
    await page.getByTestId("status").filter({ hasText: "failed" }).waitFor();
    await page.getByTestId("logs").filter({ hasText: "line 3" }).waitFor();
    expect(JSON.parse((await page.getByTestId("input").textContent()) ?? "")).toEqual({ lines: 4, fail: "on purpose" });
    await page.screenshot({ path: join(SCREENSHOTS, "execution.png"), fullPage: true });

    // The list shows both, and follows new executions without a reload.
    await page.getByRole("link", { name: "Executions", exact: true }).click();
    const table = page.getByRole("table", { name: "Executions" });
    await table.getByRole("link", { name: echoId }).waitFor();
    expect(await table.getByRole("row").count()).toBe(3);
    const later = await (await t.invoke("test.echo", { text: "from elsewhere" }, { token })).json();
    await table.getByRole("link", { name: later.execution.id }).waitFor();
    expect(errors).toEqual([]);
    await page.close();

    // Another user sees none of ana's.
    const benErrors: string[] = [];
    const ben = await signedIn(await t.userToken("ben"), benErrors);
    await ben.getByRole("link", { name: "Executions", exact: true }).click();
    await ben.getByText("No executions yet.").waitFor();
    expect(await ben.getByRole("table", { name: "Executions" }).getByRole("link").count()).toBe(0);
    // Nor one of them by its id.
    await ben.goto(`${t.url}/console#/executions/${echoId}`);
    await ben.getByRole("alert").filter({ hasText: "no such execution" }).waitFor();
    expect(await ben.getByTestId("input").count()).toBe(0);
    expect(benErrors).toEqual([]);
    await ben.close();
  }, 90_000);

  test("a service key sees the releases and rolls back to an earlier one", async () => {
    await t.publish(fixture("basic-v2"));
    await eventually(() => t.server.releases.current()?.version === "t2");
    const errors: string[] = [];
    const page = await signedIn(t.serviceKey, errors);
    await page.getByRole("link", { name: "Releases" }).click();
    const table = page.getByRole("table", { name: "Releases" });
    await table.getByText(/^active since/).waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, "releases.png"), fullPage: true });
    page.once("dialog", (dialog) => dialog.accept());
    await page.getByRole("button", { name: "Activate t1" }).click();
    await page.getByRole("status").filter({ hasText: "t1 is active" }).waitFor();
    await page.getByRole("button", { name: "Activate t2" }).waitFor();
    expect(t.server.releases.current()?.version).toBe("t1");
    expect(errors).toEqual([]);
    await page.close();

    // A user is not offered the page (test/browser/console-safety-browser.test.ts); at its address, refused its
    // data and told so.
    const userErrors: string[] = [];
    const user = await signedIn(await t.userToken("ana"), userErrors);
    await user.goto(`${t.url}/console#/releases`);
    await user
      .getByRole("alert")
      .filter({ hasText: /service key|denied|not allowed/i })
      .waitFor();
    expect(userErrors).toEqual([]);
    await user.close();
  }, 90_000);
});
