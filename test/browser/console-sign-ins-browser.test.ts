import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { addUser } from "../../src/auth/users.ts";
import { consoleSignedIn, launchChromium, PHONE, SCREENSHOTS } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { type MemoryClientProvider, signedInClient } from "../support/oauth-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;
const PASSWORD = "correct horse battery staple";

const accessTokenOf = (provider: MemoryClientProvider) => (provider.saved as { access_token: string }).access_token;

describe("the console's Signed-in apps page, in Chromium", () => {
  let t: TestServer;
  let browser: Browser;
  let agent: MemoryClientProvider;
  let editor: MemoryClientProvider;

  beforeAll(async () => {
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("claims") });
    for (const user of ["alice", "bob"]) await addUser(t.store, user, PASSWORD);
    agent = await signedInClient(t.url, "alice", PASSWORD, "Alice's Agent");
    editor = await signedInClient(t.url, "alice", PASSWORD, "Alice's Editor");
    await signedInClient(t.url, "bob", PASSWORD, "Bob's Agent");
    browser = await launchChromium();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  const acts = async (token: string) => (await t.invoke("whoami.get", {}, { token })).status === 200;

  test("a person sees their own signed-in apps, none of another's, and revokes one", async () => {
    const errors: string[] = [];
    const page = await consoleSignedIn(browser, t.url, await t.userToken("alice"), errors);
    await page.getByRole("link", { name: "Signed-in apps", exact: true }).click();
    const table = page.getByRole("table", { name: "Signed-in apps" });
    await table.waitFor();
    const apps = async () => (await table.locator("tbody tr td:first-child").allTextContents()).sort();
    expect(await apps()).toEqual(["Alice's Agent", "Alice's Editor"]);
    await page.screenshot({ path: join(SCREENSHOTS, "sign-ins.png"), fullPage: true });

    page.once("dialog", (dialog) => dialog.accept());
    await page.getByRole("button", { name: "Revoke Alice's Agent of alice" }).click();
    await page.getByRole("status").filter({ hasText: "Alice's Agent is signed out" }).waitFor();
    await eventually(async () => (await apps()).join() === "Alice's Editor");
    // The app's access ends within TOKEN_RECHECK_MS; the other app's goes on.
    await eventually(async () => !(await acts(accessTokenOf(agent))));
    expect(await acts(accessTokenOf(editor))).toBe(true);

    // Another person's are refused, said so.
    await page.getByLabel(/^Person/).fill("bob");
    await page.getByLabel(/^Person/).press("Enter");
    await page.getByRole("alert").filter({ hasText: "a user sees only its own sign-ins" }).waitFor();
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("a service key sees everyone's, or one person's, and fits a phone", async () => {
    const errors: string[] = [];
    const page = await consoleSignedIn(browser, t.url, t.serviceKey, errors, PHONE);
    await page.getByRole("link", { name: "Signed-in apps", exact: true }).click();
    const rows = page.getByRole("table", { name: "Signed-in apps" }).locator("tbody tr");
    await rows.first().waitFor();
    const listed = async () => (await rows.allTextContents()).map((text) => text.replace(/Revoke$/, "")).sort();
    await eventually(async () => (await listed()).some((row) => row.startsWith("Bob's Agentbob")));
    expect((await listed()).some((row) => row.startsWith("Alice's Editoralice"))).toBe(true);
    await page.getByLabel(/^Person/).fill("bob");
    await page.getByLabel(/^Person/).press("Enter");
    await eventually(async () => (await listed()).every((row) => row.startsWith("Bob's Agentbob")));
    expect(await page.evaluate<boolean>("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
