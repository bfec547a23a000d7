import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { revokeUserToken } from "../src/auth/tokens.ts";
import { addUser } from "../src/auth/users.ts";
import { dialects } from "./support/databases.ts";
import { fixture, startTestServer, type TestServer } from "./support/server.ts";

const CHROMIUM = "/usr/bin/chromium";
const SCREENSHOTS = join(import.meta.dir, "..", "docs", "console");
const PASSWORD = "correct horse battery staple";
const [sqlite] = dialects;

// The console's built-in sign-in, live executions list, "run again" and the releases diff (issue #19).
describe("the console, live, in Chromium", () => {
  let t: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`);
    mkdirSync(SCREENSHOTS, { recursive: true });
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("console-v1") });
    await addUser(t.store, "alice", PASSWORD);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  const newPage = async (errors: string[]): Promise<Page> => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.on("pageerror", (error) => errors.push(error.message));
    return page;
  };

  /** Through the environment's own sign-in page, as a person does it: user, password, allow. */
  const signInAsAlice = async (page: Page) => {
    await page.goto(`${t.url}/console`);
    await page.getByRole("button", { name: "Continue with this environment's sign-in page" }).click();
    await page.getByLabel("User").fill("alice");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: "Allow" }).click();
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
  };

  test("alice signs in through the built-in sign-in; the code leaves the address bar; the token acts as alice and is kept in the tab only", async () => {
    const errors: string[] = [];
    const page = await newPage(errors);
    await page.goto(`${t.url}/console`);
    await page.getByRole("button", { name: "Continue with this environment's sign-in page" }).waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, "sign-in.png") });
    await signInAsAlice(page);

    const url = new URL(page.url());
    expect(url.pathname).toBe("/console");
    expect(url.search).toBe("");
    const token = await page.evaluate(() => sessionStorage.getItem("actuate.console.credential"));
    expect(token).toBeTruthy();
    expect(page.url()).not.toContain(token as string);
    expect(await page.evaluate(() => Object.values(localStorage).join(" "))).not.toContain(token as string);
    // The token is alice's, for this environment's API.
    const me = await t.invoke("shop.whoami", {}, { token });
    expect(me.status).toBe(200);
    expect((await me.json()).execution.output).toEqual({ kind: "user", id: "alice" });

    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("a revoked or ended sign-in sends the person back to sign in, saying why", async () => {
    const errors: string[] = [];
    const page = await newPage(errors);
    await page.goto(`${t.url}/console`);
    const token = await t.userToken("bob");
    await page.getByLabel("Token or service key").fill(token);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
    // The executions list reads again while it is open: its next read after the revocation is refused.
    await page.getByRole("link", { name: "Executions" }).click();
    await page.getByRole("table", { name: "Executions" }).waitFor();
    await revokeUserToken(t.store, token);
    await page
      .getByRole("status")
      .filter({ hasText: /expired or was revoked/ })
      .waitFor();
    await page.getByRole("heading", { name: "Sign in to the Actuate console" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
