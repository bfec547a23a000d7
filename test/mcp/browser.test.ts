import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { launchChromium } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;
const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>agent</title></head>
<body><script type="module" src="/app.js"></script></body></html>`;

// A browser asks before sending an MCP request from another origin (a preflight naming its headers):
// what the server allows must cover what the clients of both eras send.
describe("MCP from a page of another origin, in Chromium", () => {
  let t: TestServer;
  let site: ReturnType<typeof Bun.serve>;
  let browser: Browser;

  beforeAll(async () => {
    const built = await Bun.build({
      entrypoints: [join(import.meta.dir, "..", "fixtures", "mcp-page", "app.ts")],
      target: "browser",
    });
    if (!built.success) throw new AggregateError(built.logs, "the page's script did not build");
    const script = await (built.outputs[0] as Blob).text();
    site = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (request) =>
        new URL(request.url).pathname === "/app.js"
          ? new Response(script, { headers: { "content-type": "text/javascript" } })
          : new Response(PAGE, { headers: { "content-type": "text/html" } }),
    });
    // The page is served from localhost, the API from 127.0.0.1: two origins.
    t = await startTestServer(sqlite as (typeof dialects)[number], {
      release: fixture("basic"),
      env: { CORS_ORIGINS: `http://localhost:${site.port}` },
    });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    site?.stop(true);
    await t?.stop();
  });

  for (const era of ["2025-11-25", "2026-07-28"]) {
    test(`the SDK's client lists and calls tools in the ${era} era`, async () => {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await page.goto(`http://localhost:${site.port}/`);
      await page.waitForFunction(() => "callEcho" in globalThis);
      const outcome = await page.evaluate(
        (args) => (globalThis as unknown as { callEcho: (...args: string[]) => Promise<unknown> }).callEcho(...args),
        [t.url, t.serviceKey, era],
      );
      expect(outcome).toEqual({
        version: era,
        tools: expect.arrayContaining(["test.echo"]),
        echo: { text: "from a page" },
      });
      expect(errors).toEqual([]);
      await page.close();
    }, 60_000);
  }
});
