import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { createClient } from "../../src/client/index.ts";
import { launchChromium, openPage, type PageSite, servePages } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>todos</title></head>
<body><div id="root"></div><script type="module" src="/react-optimistic.js"></script></body></html>`;

describe("actuate/react in Chromium: optimistic updates and a paginated live query", () => {
  let t: TestServer;
  let site: PageSite;
  let browser: Browser;

  beforeAll(async () => {
    const entry = join(import.meta.dir, "..", "fixtures", "browser", "react-optimistic.tsx");
    site = await servePages({ "/react-optimistic.js": entry }, { "/": PAGE });
    t = await startTestServer(sqlite as (typeof dialects)[number], {
      release: fixture("optimistic"),
      env: { CORS_ORIGINS: site.origin },
    });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    site?.stop();
    await t?.stop();
  });

  /** The page for one list of its own, and the page's errors. */
  const open = async (list: string): Promise<{ page: Page; errors: string[] }> => {
    const token = await t.userToken("olga");
    return openPage(browser, `${site.origin}/?api=${encodeURIComponent(t.url)}&token=${token}&list=${list}`);
  };
  /** Waits until the element's whole text is `text`. */
  const shows = (page: Page, selector: string, text: string) =>
    page.locator(selector, { hasText: new RegExp(`^${text.replace(/[*]/g, "\\*")}$`) }).waitFor();
  const server = () => createClient({ url: t.url, token: t.serviceKey });

  test("useAction's optimistic row shows before the answer, the server's row replaces it; a failed one is rolled back with its error", async () => {
    const { page, errors } = await open("opt");
    try {
      await page.getByRole("button", { name: "Add milk" }).click();
      // The action waits on its gate: the row is the local one (starred) until the test opens it.
      await shows(page, "#todos", "milk*");
      await server().invoke("todo.open", { name: "opt-milk" });
      await shows(page, "#todos", "milk");

      await page.getByRole("button", { name: "Add refused" }).click();
      await shows(page, "#todos", "milk,refused*");
      await server().invoke("todo.open", { name: "opt-refused" });
      await shows(page, "#error", "refused was refused");
      await shows(page, "#todos", "milk");
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  }, 60_000);

  test("usePaginatedQuery: a page of 2, loadMore shows 4 then the rest (exhausted); a live write moves the pages along", async () => {
    const client = server();
    for (const title of ["p1", "p2", "p3", "p4", "p5"]) await client.invoke("todo.add", { title, list: "pg-paged" });
    const { page, errors } = await open("pg");
    try {
      await shows(page, "#pages", "canLoadMore: p5,p4");
      const loadMore = page.getByRole("button", { name: "Load more" });
      await loadMore.click();
      await shows(page, "#pages", "canLoadMore: p5,p4,p3,p2");

      // A row written while paginated comes first (titles descend): the others move along, none twice.
      await client.invoke("todo.add", { title: "p9", list: "pg-paged" });
      await shows(page, "#pages", "canLoadMore: p9,p5,p4,p3");
      await loadMore.click();
      await shows(page, "#pages", "exhausted: p9,p5,p4,p3,p2,p1");

      // A row deleted: the last page is one shorter, still exhausted.
      const { todos } = (await client.query({ todos: { $: { where: { title: "p4" } } } })) as {
        todos: { id: string }[];
      };
      await client.invoke("todo.remove", { id: todos[0]?.id });
      await shows(page, "#pages", "exhausted: p9,p5,p3,p2,p1");
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  }, 60_000);
});
