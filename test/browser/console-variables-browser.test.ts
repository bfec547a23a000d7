import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { axeViolations, consoleSignedIn, launchChromium, PHONE, SCREENSHOTS } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

// Issue #44: the console's Variables page. It lists, sets and unsets; a secret's value never reaches it.

const [sqlite] = dialects;
const SECRETS_KEY = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64");
const STRIPE = `sk_live_${crypto.randomUUID().replaceAll("-", "")}`;
const TYPED = `typed_${crypto.randomUUID().replaceAll("-", "")}`;

describe("the console's Variables page, in Chromium", () => {
  let t: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    t = await startTestServer(sqlite as (typeof dialects)[number], { env: { SECRETS_KEY } });
    // The release requires STRIPE_KEY: set before it is published.
    const put = await t.fetch("/variables/STRIPE_KEY", {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ value: STRIPE, secret: true }),
    });
    if (put.status !== 201) throw new Error(`STRIPE_KEY: ${put.status} ${await put.text()}`);
    await t.publish(fixture("vars-surface"));
    browser = await launchChromium();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  test("a service key lists, sets a secret and a plain value, unsets; no secret reaches the page", async () => {
    const errors: string[] = [];
    const page = await consoleSignedIn(browser, t.url, t.serviceKey, errors);
    const answers: Promise<string>[] = [];
    page.on("response", (response) => {
      if (new URL(response.url()).pathname.startsWith("/variables")) answers.push(response.text().catch(() => ""));
    });
    await page.getByRole("link", { name: "Variables", exact: true }).click();
    const table = page.getByRole("table", { name: "Variables" });
    await table.waitFor();
    const row = (name: string) => table.locator("tbody tr").filter({ has: page.locator(`code:text-is("${name}")`) });
    await eventually(async () => (await row("STRIPE_KEY").count()) === 1);
    expect(await row("STRIPE_KEY").textContent()).toContain("••••");
    expect(await row("STRIPE_KEY").textContent()).toContain("required");
    expect(await row("REGION").textContent()).toContain("declared");
    expect(await row("REGION").textContent()).not.toContain("missing");

    // A secret: typed into a password field, sent once, shown as •••• after.
    await page.getByLabel("Name").fill("API_TOKEN");
    await page.getByRole("checkbox", { name: /^Secret/ }).check();
    const value = page.getByLabel("Value", { exact: true });
    expect(await value.getAttribute("type")).toBe("password");
    await value.fill(TYPED);
    await page.getByRole("button", { name: "Set", exact: true }).click();
    await page.getByRole("status").filter({ hasText: "API_TOKEN is set" }).waitFor();
    await eventually(async () => (await row("API_TOKEN").count()) === 1);
    expect(await row("API_TOKEN").textContent()).toContain("••••");
    expect(await row("API_TOKEN").textContent()).toContain("not declared");
    expect(await value.inputValue()).toBe("");

    // A plain value replaces the default.
    await page.getByLabel("Name").fill("REGION");
    await page.getByLabel("Value", { exact: true }).fill("ap-south");
    await page.getByRole("button", { name: "Set", exact: true }).click();
    await eventually(async () => ((await row("REGION").textContent()) ?? "").includes("ap-south"));
    expect((await (await t.fetch("/variables/REGION")).json()).value).toBe("ap-south");
    await page.screenshot({ path: join(SCREENSHOTS, "variables.png"), fullPage: true });

    // Unsetting the required secret: the page says the release misses it.
    page.once("dialog", (dialog) => dialog.accept());
    await page.getByRole("button", { name: "Unset STRIPE_KEY" }).click();
    await page.getByRole("status").filter({ hasText: "STRIPE_KEY is unset" }).waitFor();
    await eventually(async () => ((await row("STRIPE_KEY").textContent()) ?? "").includes("missing"));
    await page.getByRole("alert").filter({ hasText: "The release requires STRIPE_KEY" }).waitFor();

    const bodies = await Promise.all(answers);
    expect(bodies.length).toBeGreaterThan(3);
    for (const body of bodies) {
      expect(body).not.toContain(STRIPE);
      expect(body).not.toContain(TYPED);
    }
    const html = await page.content();
    expect(html).not.toContain(STRIPE);
    expect(html).not.toContain(TYPED);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("a user has no Variables page", async () => {
    const errors: string[] = [];
    const page = await consoleSignedIn(browser, t.url, await t.userToken("alice"), errors);
    await page.getByRole("link", { name: "Overview", exact: true }).waitFor();
    // The page's links for service keys wait for the probe's answer; Releases stands for them.
    await page.waitForLoadState("networkidle");
    expect(await page.getByRole("link", { name: "Variables", exact: true }).count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("on a phone: no serious or critical accessibility violation, nothing wider than the screen", async () => {
    const errors: string[] = [];
    const page = await consoleSignedIn(browser, t.url, t.serviceKey, errors, PHONE);
    await page.getByRole("link", { name: "Variables", exact: true }).click();
    await page.getByRole("table", { name: "Variables" }).waitFor();
    expect(await axeViolations(page)).toEqual([]);
    expect(await page.evaluate<boolean>("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
