import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { launchChromium, openPage, type PageSite, servePages } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>notes</title></head>
<body>
<p>connection: <span id="connection">-</span></p>
<p>notes: <span id="notes"></span></p>
<button id="add">Add a note</button> <span id="added"></span>
<button id="upload">Upload</button> <span id="uploaded"></span>
<script type="module" src="/app.js"></script>
</body></html>`;

const REACT_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>notes in React</title></head>
<body><div id="root"></div><script type="module" src="/react.js"></script></body></html>`;

describe("actuate/client in Chromium, from another origin", () => {
  let t: TestServer;
  let site: PageSite;
  let browser: Browser;

  beforeAll(async () => {
    const fixtures = join(import.meta.dir, "..", "fixtures", "browser");
    site = await servePages(
      { "/app.js": join(fixtures, "app.ts"), "/react.js": join(fixtures, "react-app.tsx") },
      { "/": PAGE, "/react": REACT_PAGE },
    );
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

  test("the client type-checks in a browser program: the DOM's types only, none of Bun's or Node's", async () => {
    const proc = Bun.spawn(["bunx", "tsc", "-p", join(import.meta.dir, "..", "fixtures", "browser")], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const out = (await new Response(proc.stdout).text()) + (await new Response(proc.stderr).text());
    expect(out.trim()).toBe("");
    expect(await proc.exited).toBe(0);
  }, 60_000);

  test("the page subscribes, invokes, uploads through a signed URL, and sees its write come back live", async () => {
    const token = await t.userToken("bea");
    const { page, errors } = await openPage(browser, `${site.origin}/?api=${encodeURIComponent(t.url)}&token=${token}`);
    await page.locator("#connection", { hasText: "open" }).waitFor();
    await page.getByRole("button", { name: "Add a note" }).click();
    await page.locator("#added", { hasText: /^[0-9a-f-]{36}$/ }).waitFor();
    await page.locator("#notes", { hasText: "from the browser" }).waitFor();
    await page.getByRole("button", { name: "Upload" }).click();
    await page.locator("#uploaded", { hasText: "typed in a browser" }).waitFor();
    expect(errors).toEqual([]);
    // The note is bea's: the record says so.
    const listed = await (await t.fetch("/executions?action=data.add-note", { token })).json();
    expect(listed.items[0].principal).toEqual({ kind: "user", id: "bea" });
  }, 60_000);

  test("actuate/react: useQuery shows the live result, useAction runs the action, the list follows", async () => {
    const token = await t.userToken("rita");
    const { page, errors } = await openPage(
      browser,
      `${site.origin}/react?api=${encodeURIComponent(t.url)}&token=${token}`,
    );
    await page.locator("#state", { hasText: "0 notes" }).waitFor();
    await page.getByRole("button", { name: "Add from React" }).click();
    await page.locator("#added").waitFor();
    await page.getByRole("listitem").filter({ hasText: "from React" }).waitFor();
    await page.locator("#state", { hasText: "1 notes" }).waitFor();
    expect(errors).toEqual([]);
  }, 60_000);
});
