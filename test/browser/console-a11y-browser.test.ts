import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { axeViolations, consoleSignedIn, launchChromium, PHONE } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

// Issue #19 asks for an accessible console (labels, keyboard, contrast). axe-core, the engine browsers'
// accessibility tools use, checks every page as a service key sees it, on a desktop and a phone: no
// violation of serious or critical impact (missing labels and names, colour contrast, landmarks, ARIA).
const [sqlite] = dialects;

describe("the console's accessibility (axe-core in Chromium)", () => {
  let t: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("console-data") });
    browser = await launchChromium();
    // Something on every page: an execution, a file, a note.
    await t.invoke("notes.add", { title: "a", priority: 1 });
    await t.fetch("/storage/upload-url", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ path: "docs/a.txt" }),
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  const PAGES: [string, string][] = [
    ["Overview", "Overview"],
    ["Actions", "Actions"],
    ["Executions", "Executions"],
    ["Runs", "Runs"],
    ["Data", "Data"],
    ["Files", "Files"],
    ["Releases", "Releases"],
    ["Signed-in apps", "Signed-in apps"],
  ];

  for (const viewport of [undefined, PHONE]) {
    test(`every page has no serious or critical violation (${viewport ? "phone" : "desktop"})`, async () => {
      const errors: string[] = [];
      const page = await consoleSignedIn(browser, t.url, t.serviceKey, errors, viewport);
      const found: string[] = [];
      for (const [link, shown] of PAGES) {
        await page.getByRole("link", { name: link, exact: true }).click();
        await page.getByRole("heading", { name: shown, exact: true }).first().waitFor();
        if (link === "Actions") {
          await page.getByRole("link", { name: "notes.add" }).click();
          await page.getByRole("heading", { name: "notes.add" }).waitFor();
        }
        for (const v of await axeViolations(page)) found.push(`${link}: ${v}`);
      }
      // A load that failed: its reason and the button that asks again.
      await page.goto(`${t.url}/console#/runs/${crypto.randomUUID()}`);
      await page.getByRole("button", { name: "Try again" }).waitFor();
      for (const v of await axeViolations(page)) found.push(`A failed load: ${v}`);
      // The sign-in page, signed out.
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByLabel("Token or service key").waitFor();
      for (const v of await axeViolations(page)) found.push(`Sign in: ${v}`);
      expect(found).toEqual([]);
      expect(errors).toEqual([]);
      await page.close();
    }, 90_000);
  }
});
