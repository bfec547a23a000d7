import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pixelmatch from "pixelmatch";
import type { Browser, Locator, Page } from "playwright-core";
import { DESKTOP, launchChromium } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { eventually, startTestServer, type TestServer } from "../support/server.ts";

/** The part of pngjs used here (it ships no types). */
interface Png {
  width: number;
  height: number;
  data: Uint8Array;
}
const { PNG } = require("pngjs") as {
  PNG: { new (size: { width: number; height: number }): Png; sync: { read(b: Buffer): Png; write(p: Png): Buffer } };
};

const [sqlite] = dialects;
const ROOT = join(import.meta.dir, "..", "..");
/** The committed references (docs/decisions/console-design.md says how they are made and compared). */
const SCREENS = join(ROOT, "docs", "console", "screens");
const UPDATE = process.env.UPDATE_SCREENS === "1";
// A pixel differs when pixelmatch's YIQ distance exceeds THRESHOLD; a page passes with at most
// MAX_DIFFERING of its pixels differing (anti-aliasing and sub-pixel text drift stay well under it).
const THRESHOLD = 0.1;
const MAX_DIFFERING = 0.005;
// The page's clock: relative times ("3 min ago") and durations "so far" read it.
const FROZEN_AT = new Date("2026-01-15T10:00:00Z");

/**
 * Compares a screenshot with its committed reference, or writes the reference when there is none or
 * UPDATE_SCREENS=1. On a mismatch the diff image goes to a temp dir, named in the failure.
 */
function compareScreen(name: string, shot: Buffer): void {
  const reference = join(SCREENS, `${name}.png`);
  if (UPDATE || !existsSync(reference)) {
    mkdirSync(SCREENS, { recursive: true });
    writeFileSync(reference, shot);
    console.log(`screens: wrote ${reference}${UPDATE ? " (UPDATE_SCREENS=1)" : " (no reference yet)"}`);
    return;
  }
  const expected = PNG.sync.read(readFileSync(reference));
  const actual = PNG.sync.read(shot);
  const sizeNote = `${name}: ${actual.width}×${actual.height}, reference ${expected.width}×${expected.height}`;
  expect(`${actual.width}×${actual.height}`, sizeNote).toBe(`${expected.width}×${expected.height}`);
  const diff = new PNG({ width: actual.width, height: actual.height });
  const differing = pixelmatch(expected.data, actual.data, diff.data, actual.width, actual.height, {
    threshold: THRESHOLD,
  });
  const share = differing / (actual.width * actual.height);
  if (share > MAX_DIFFERING) {
    const dir = mkdtempSync(join(tmpdir(), "actuate-screens-"));
    writeFileSync(join(dir, `${name}.actual.png`), shot);
    writeFileSync(join(dir, `${name}.diff.png`), PNG.sync.write(diff));
    throw new Error(
      `${name}: ${(share * 100).toFixed(2)} % of pixels differ (at most ${MAX_DIFFERING * 100} %); ` +
        `diff at ${join(dir, `${name}.diff.png`)}, screenshot at ${join(dir, `${name}.actual.png`)}`,
    );
  }
}

/**
 * What differs from one run to the next, on every page: ids, times, durations, who published. Visible
 * ones only: a mask is drawn even for an element with no box on screen (a collapsed table's cells).
 */
const varying = (page: Page): Locator[] => [
  page.locator(".short-id:visible"),
  page.locator("time:visible"),
  page.locator("h1 code"),
  page.locator("td.num:visible"),
  page.locator("dd .hint:visible"),
  page.locator(".step-head .hint:visible"),
  page.locator(".bar-track"),
  page.getByTestId("published-by"),
  page.getByTestId("logs"),
  page.getByTestId("run-output"),
  page.getByTestId("live-sockets"),
  // The charts' time axis is the server's clock, not the page's frozen one; a run's bars are its steps' real times.
  page.locator(".chart-canvas"),
  page.locator(".timeline-svg"),
];

/**
 * Masked text still sizes its column: durations and relative times are given one width each, so a table's
 * columns fall where the reference's did whatever this run's values were.
 */
const FIXED_WIDTHS = `for (const el of document.querySelectorAll("td.num")) el.textContent = "12 ms";
  for (const el of document.querySelectorAll("time")) el.textContent = "3 min ago";
  for (const el of document.querySelectorAll(".step-head .hint")) el.textContent = "1 attempt, 3 ms";`;

describe("the console's pages look as their committed screenshots (docs/console/screens)", () => {
  let t: TestServer;
  let browser: Browser;
  let executionId: string;
  let runId: string;

  beforeAll(async () => {
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: join(ROOT, "releases", "v1") });
    browser = await launchChromium();
    // The same few calls each time, by one user, so every list holds the same rows.
    const ana = await t.userToken("ana");
    const call = async (action: string, input: unknown) => (await t.invoke(action, input, { token: ana })).json();
    executionId = (await call("math.add", { a: 2, b: 3 })).execution.id;
    await call("math.add", { a: 40, b: 2 });
    await call("greetings.hello", { name: "Ana" });
    await call("notes.add", { title: "Ship the console" });
    runId = (await call("notes.follow-up", { title: "Review", afterMs: 0 })).runId;
    await eventually(async () => (await (await t.fetch(`/runs/${runId}`)).json()).status === "succeeded", 15_000);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  /** A tab with the frozen clock in `scheme`, signed in with the service key (it sees every page). */
  const open = async (scheme: "light" | "dark", signIn = true): Promise<Page> => {
    const page = await browser.newPage({ viewport: DESKTOP, colorScheme: scheme });
    await page.clock.setFixedTime(FROZEN_AT);
    await page.goto(`${t.url}/console`);
    if (!signIn) return page;
    await page.getByLabel("Token or service key").fill(t.serviceKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
    return page;
  };

  const shoot = async (page: Page, name: string) => {
    // The pointer off every link, so no hover style is drawn.
    await page.mouse.move(DESKTOP.width - 1, DESKTOP.height - 1);
    await page.evaluate("document.fonts.ready");
    await page.evaluate(FIXED_WIDTHS);
    const shot = await page.screenshot({
      fullPage: true,
      animations: "disabled",
      mask: varying(page),
      maskColor: "#9aa4ae",
    });
    compareScreen(name, shot);
  };

  /** Each page: where it is, and what shows that its data is in (a function: the ids are known in beforeAll). */
  const pages = (): { name: string; hash: string; ready: (page: Page) => Locator; charts?: number }[] => [
    {
      name: "overview",
      hash: "overview",
      ready: (p) => p.getByTestId("count-succeeded").filter({ hasText: "5" }),
      charts: 2,
    },
    { name: "actions", hash: "actions", ready: (p) => p.getByRole("link", { name: "math.add" }) },
    {
      name: "action",
      hash: "actions/math.add",
      ready: (p) => p.getByRole("button", { name: "Run math.add" }),
      charts: 2,
    },
    {
      name: "executions",
      hash: "executions",
      ready: (p) => p.getByRole("table", { name: "Executions" }).getByRole("link").nth(4),
    },
    { name: "execution", hash: `executions/${executionId}`, ready: (p) => p.getByTestId("output") },
    { name: "runs", hash: "runs", ready: (p) => p.getByRole("table", { name: "Runs" }).getByRole("link").first() },
    { name: "run", hash: `runs/${runId}`, ready: (p) => p.getByTestId("run-output") },
    { name: "data", hash: "data", ready: (p) => p.getByRole("link", { name: "notes" }) },
    { name: "files", hash: "files", ready: (p) => p.getByText("No files.") },
    { name: "releases", hash: "releases", ready: (p) => p.getByRole("table", { name: "Releases" }) },
    { name: "variables", hash: "variables", ready: (p) => p.getByText("No variable is set or declared.") },
  ];

  test("the sign-in page", async () => {
    const page = await open("light", false);
    // The built-in sign-in's choice is drawn once the page knows the environment offers it.
    await page.getByRole("heading", { name: "With your account" }).waitFor();
    await shoot(page, "sign-in");
    await page.close();
  }, 30_000);

  test("every page, light", async () => {
    const page = await open("light");
    for (const { name, hash, ready, charts } of pages()) {
      await page.goto(`${t.url}/console#/${hash}`);
      await ready(page).waitFor();
      // uPlot is fetched apart: the page is whole once each chart is drawn.
      if (charts)
        await page
          .locator(".chart-canvas .uplot")
          .nth(charts - 1)
          .waitFor();
      await shoot(page, name);
    }
    await page.close();
  }, 120_000);

  test("at 1024 px, the narrowest width designed for, a service key's executions filters hold one line", async () => {
    const page = await browser.newPage({ viewport: { width: 1024, height: 768 }, colorScheme: "light" });
    await page.goto(`${t.url}/console#/executions`);
    await page.getByLabel("Token or service key").fill(t.serviceKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    const form = page.getByRole("form", { name: "Filters" });
    // The caller filter comes once the console knows the credential is a service key.
    await form.getByLabel("Caller").waitFor();
    const bottoms = (await page.evaluate(
      `[...document.querySelector("form.filters").children].map((child) => child.getBoundingClientRect().bottom)`,
    )) as number[];
    expect(bottoms.length).toBe(6);
    expect(Math.max(...bottoms) - Math.min(...bottoms)).toBeLessThan(8);
    await page.close();
  }, 30_000);

  test("an id shown short copies the whole id; a relative time holds the exact instant", async () => {
    const context = await browser.newContext({
      viewport: DESKTOP,
      permissions: ["clipboard-read", "clipboard-write"],
    });
    const page = await context.newPage();
    await page.goto(`${t.url}/console#/executions`);
    await page.getByLabel("Token or service key").fill(t.serviceKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    const row = page
      .getByRole("table", { name: "Executions" })
      .getByRole("row")
      .filter({ has: page.locator(`[title="${executionId}"]`) });
    expect(await row.locator("code.id").textContent()).toBe(executionId.slice(0, 8));
    await row.getByRole("button", { name: `Copy Execution ${executionId}` }).click();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(executionId);
    const created = (await (await t.fetch(`/executions/${executionId}`)).json()).createdAt as string;
    const time = row.locator("time");
    expect(await time.getAttribute("datetime")).toBe(created);
    expect(await time.getAttribute("title")).toBe(new Date(created).toISOString());
    expect(await time.textContent()).toMatch(/ago$|^now$/);
    await context.close();
  }, 30_000);

  test("a list being read says so (role status), then shows its rows", async () => {
    const page = await open("light");
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    // The list's read is held until the loading state has been seen.
    await page.route(
      (url) => url.pathname === "/executions",
      async (route) => {
        await held;
        await route.continue();
      },
    );
    await page.goto(`${t.url}/console#/executions`);
    await page.getByRole("status").filter({ hasText: "Loading executions…" }).waitFor();
    release();
    await page.getByRole("table", { name: "Executions" }).getByRole("link").nth(4).waitFor();
    expect(await page.getByText("Loading executions…").count()).toBe(0);
    await page.close();
  }, 30_000);

  test("the overview, dark", async () => {
    const page = await open("dark");
    await pages()[0]?.ready(page).waitFor();
    await page.locator(".chart-canvas .uplot").nth(1).waitFor();
    await shoot(page, "overview-dark");
    await page.close();
  }, 30_000);
});
