import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { axeViolations, DESKTOP, launchChromium } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { fixture } from "../support/server.ts";

const [sqlite] = dialects;

// Issue #44 §2: the "Fork" button of an environment in the service's console (docs/API.md, "Forks").
describe("forking an environment from the service's console in Chromium", () => {
  let t: HostingServer;
  let browser: Browser;

  beforeAll(async () => {
    t = await startHostingServer(sqlite as (typeof dialects)[number], {
      environments: [{ handle: "acme-prod", organization: "acme", release: fixture("data") }],
    });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  const signedIn = async (key: string, errors: string[]): Promise<Page> => {
    const page = await browser.newPage({ viewport: DESKTOP });
    page.on("pageerror", (error) => errors.push(error.message));
    await page.goto(`${t.serviceUrl}/console`);
    await page.getByLabel("Token or service key").fill(key);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("table", { name: "Environments" }).waitFor();
    return page;
  };

  test("an organization key forks an environment with its data and a TTL; the list shows where it came from", async () => {
    await t.invoke("acme-prod", "data.add-note", { title: "copied", priority: 1 });
    const errors: string[] = [];
    const page = await signedIn(await t.key({ organization: "acme" }), errors);
    await page.getByRole("button", { name: "Fork acme-prod" }).click();
    await page.getByRole("heading", { name: "Fork acme-prod" }).waitFor();
    expect(await axeViolations(page)).toEqual([]);

    // A refusal is said, and nothing is made.
    await page.getByLabel("New handle").fill("acme-pr-7");
    await page.getByLabel("Time to live").fill("100d");
    await page.getByRole("button", { name: "Fork environment" }).click();
    await page.getByRole("alert").filter({ hasText: "at most 90d" }).waitFor();
    expect(await t.store.control.environments.byHandle("acme-pr-7")).toBeNull();

    await page.getByLabel("Time to live").fill("1d");
    await page.getByLabel("Copy its data (entities, links, files)").check();
    await page.getByRole("button", { name: "Fork environment" }).click();
    await page.getByRole("status").filter({ hasText: "acme-pr-7 forked from acme-prod" }).waitFor();
    expect(await page.getByRole("status").textContent()).toContain("1 entities");
    const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: "acme-pr-7" }) });
    await row.waitFor();
    expect(await row.getByRole("cell").nth(4).textContent()).toBe("acme-prod");
    expect(await row.getByRole("cell").nth(5).textContent()).not.toBe("—");

    const fork = await t.store.control.environments.byHandle("acme-pr-7");
    expect(fork).toMatchObject({ forkedFrom: "acme-prod", schedulesPaused: true });
    expect((fork?.expiresAt ?? 0) - Date.now()).toBeGreaterThan(86_400_000 - 120_000);
    // Served at once, with the copied data.
    const answer = await t.invoke("acme-pr-7", "data.query", { query: { notes: {} } });
    expect((await answer.json()).execution.output.result.notes).toMatchObject([{ title: "copied" }]);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
