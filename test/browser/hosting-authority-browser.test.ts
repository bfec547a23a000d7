import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { addUser } from "../../src/auth/users.ts";
import { launchChromium } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { fixture } from "../support/server.ts";

const PASSWORD = "correct horse battery staple";
const PROD = "acme-prod";
const [sqlite] = dialects;

// Hosting mode (issue #41 §3): an environment's console signs in through the service's one authority, at the apex.
describe("the console of an environment signs in at the apex, in Chromium", () => {
  let h: HostingServer;
  let browser: Browser;

  beforeAll(async () => {
    h = await startHostingServer(sqlite as (typeof dialects)[number], {
      environments: [{ handle: PROD, organization: "acme", release: fixture("console-v1") }],
    });
    await addUser(h.store, "alice", PASSWORD);
    await addUser(h.store, "bob", PASSWORD);
    await h.store.control.grants.grant("alice", { environment: await h.id(PROD) }, Date.now());
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await h?.stop();
  });

  const signInAt = async (page: Page, user: string) => {
    await page.goto(`${h.at(PROD)}/console`);
    await page.getByRole("button", { name: "Continue with this environment's sign-in page" }).click();
    await page.getByRole("heading", { name: `Sign in to ${new URL(h.serviceUrl).host}` }).waitFor();
    expect(new URL(page.url()).origin).toBe(h.serviceUrl);
    await page.getByLabel("User").fill(user);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
  };

  test("alice, granted acme-prod, signs in on the service's page, allows the console for acme-prod, and is back in its console", async () => {
    const errors: string[] = [];
    const page = await browser.newPage();
    page.on("pageerror", (error) => errors.push(error.message));
    await signInAt(page, "alice");
    await page.getByText(`read data of ${PROD} as you`).waitFor();
    await page.getByRole("button", { name: "Allow" }).click();
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
    expect(new URL(page.url()).origin).toBe(h.at(PROD));
    expect(errors).toEqual([]);
  }, 60_000);

  test("bob, granted nothing, is told so and comes back to the console with the reason", async () => {
    const page = await browser.newPage();
    await signInAt(page, "bob");
    await page.getByRole("heading", { name: `No access to ${PROD}` }).waitFor();
    await page.getByRole("button", { name: "Back to Actuate console" }).click();
    await page
      .getByRole("alert")
      .filter({ hasText: `no access to ${PROD}` })
      .waitFor();
    expect(new URL(page.url()).origin).toBe(h.at(PROD));
  }, 60_000);
});
