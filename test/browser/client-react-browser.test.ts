import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { revokeUserToken } from "../../src/auth/tokens.ts";
import { launchChromium, openPage, type PageSite, servePages } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;
const FIXTURE = join(import.meta.dir, "..", "fixtures", "browser", "react-errors");

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>errors in React</title></head>
<body><div id="root"></div><script type="module" src="/page.js"></script></body></html>`;

describe("actuate/react in Chromium: errors and the connection's state reach the page", () => {
  let t: TestServer;
  let site: PageSite;
  let browser: Browser;

  beforeAll(async () => {
    site = await servePages({ "/page.js": join(FIXTURE, "page.tsx") }, { "/": PAGE });
    t = await startTestServer(sqlite as (typeof dialects)[number], {
      release: fixture("data"),
      env: { CORS_ORIGINS: site.origin },
    });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    site?.stop();
    await t?.stop();
  });

  test("the page type-checks with the DOM's types only", async () => {
    const proc = Bun.spawn(["bunx", "tsc", "-p", FIXTURE], { stdout: "pipe", stderr: "pipe" });
    const out = (await new Response(proc.stdout).text()) + (await new Response(proc.stderr).text());
    expect(out.trim()).toBe("");
    expect(await proc.exited).toBe(0);
  }, 60_000);

  test("a refused useQuery shows its error; a revoked token shows unauthorized until a new one comes", async () => {
    const token = await t.userToken("ria");
    const { page, errors } = await openPage(browser, `${site.origin}/?api=${encodeURIComponent(t.url)}&token=${token}`);
    await page.locator("#connection", { hasText: "open" }).waitFor();
    await page.locator("#notes", { hasText: "0 notes" }).waitFor();
    await page.locator("#planets", { hasText: "error: data_provider_rejected" }).waitFor();

    await revokeUserToken(t.store, token);
    await page.locator("#connection", { hasText: "unauthorized" }).waitFor({ timeout: 15_000 });
    await page.locator("#notes", { hasText: "error: unauthorized" }).waitFor();

    // A new token from the callback: connected again, and the query's new data clears its error.
    const fresh = await t.userToken("ria");
    await page.evaluate((value) => Object.assign(globalThis, { freshToken: value }), fresh);
    await page.locator("#connection", { hasText: "open" }).waitFor({ timeout: 15_000 });
    await page.locator("#notes", { hasText: "0 notes" }).waitFor();
    expect(errors).toEqual([]);
  }, 60_000);
});
