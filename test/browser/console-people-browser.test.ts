import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { addUser } from "../../src/auth/users.ts";
import { DESKTOP, launchChromium, SCREENSHOTS } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { fixture } from "../support/server.ts";

const PASSWORD = "correct horse battery staple";
const PROD = "acme-prod";
const [sqlite] = dialects;

// Issue #41 §1, §3: a person signs in once at the service's console, sees the environments granted to them
// and opens one's console without the password again; an organization's key grants people and makes keys there.
describe("people at the service's console (hosting mode) in Chromium", () => {
  let h: HostingServer;
  let browser: Browser;

  beforeAll(async () => {
    h = await startHostingServer(sqlite as (typeof dialects)[number], {
      environments: [
        { handle: PROD, organization: "acme", release: fixture("console-v1") },
        { handle: "acme-dev", organization: "acme" },
        { handle: "globex-prod", organization: "globex" },
      ],
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

  const newPage = async (errors: string[]): Promise<Page> => {
    const page = await browser.newPage({ viewport: DESKTOP });
    page.on("pageerror", (error) => errors.push(error.message));
    page.on("dialog", (dialog) => dialog.accept());
    return page;
  };

  test("alice signs in at the apex, sees her environments, and opens acme-prod's console without her password again", async () => {
    const errors: string[] = [];
    const context = await browser.newContext({ viewport: DESKTOP });
    const page = await context.newPage();
    page.on("pageerror", (error) => errors.push(error.message));
    await page.goto(`${h.serviceUrl}/console`);
    await page.getByRole("button", { name: "Continue to the service's sign-in page" }).click();
    await page.getByRole("heading", { name: `Sign in to ${new URL(h.serviceUrl).host}` }).waitFor();
    await page.getByLabel("User").fill("alice");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    // The apex's token only lists environments, and its consent says so.
    await page.getByText("will see which environments of").waitFor();
    expect(await page.getByText("run actions and read data").count()).toBe(0);
    await page.getByRole("button", { name: "Allow" }).click();

    const table = page.getByRole("table", { name: "Environments" });
    await table.waitFor();
    expect(new URL(page.url()).origin).toBe(h.serviceUrl);
    expect((await table.getByRole("link").allTextContents()).sort()).toEqual([PROD, "main"]);
    // A person administers nothing here: no environment to make, no people or keys.
    expect(await page.getByRole("button", { name: "Create environment" }).count()).toBe(0);
    expect(await page.getByRole("heading", { name: "People and keys" }).count()).toBe(0);

    // acme-prod's console signs in through the same authority, whose session knows alice: no password asked.
    await table.getByRole("link", { name: PROD }).click();
    await page.getByRole("button", { name: "Continue with this environment's sign-in page" }).click();
    await page.getByText(`read data of ${PROD} as you`).waitFor();
    expect(await page.getByLabel("Password").count()).toBe(0);
    await page.getByRole("button", { name: "Allow" }).click();
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
    expect(new URL(page.url()).origin).toBe(h.at(PROD));
    expect(errors).toEqual([]);
    await context.close();
  }, 60_000);

  test("bob, granted nothing, signs in and sees environment 1 only: it is every person's", async () => {
    const errors: string[] = [];
    const page = await newPage(errors);
    await page.goto(`${h.serviceUrl}/console`);
    await page.getByRole("button", { name: "Continue to the service's sign-in page" }).click();
    await page.getByLabel("User").fill("bob");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: "Allow" }).click();
    const table = page.getByRole("table", { name: "Environments" });
    await table.waitFor();
    expect(await table.getByRole("link").allTextContents()).toEqual(["main"]);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("an organization's key grants a person an environment and takes it away, makes a key (its secret shown once) and revokes it", async () => {
    const errors: string[] = [];
    const page = await newPage(errors);
    await page.goto(`${h.serviceUrl}/console`);
    await page.getByLabel("Token or service key").fill(await h.key({ organization: "acme" }));
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { name: "People and keys" }).waitFor();
    // Its organization and its environments only.
    expect(await page.getByLabel("Of").locator("option").allTextContents()).toEqual([
      "acme (every environment)",
      "acme-dev",
      PROD,
    ]);
    await page.getByLabel("Of").selectOption(`env:${PROD}`);
    const people = page.getByRole("table", { name: "People" });
    await people.getByRole("cell", { name: "alice", exact: true }).waitFor();

    const prod = await h.id(PROD);
    await page.getByLabel("Person (user id)").fill("bob");
    await page.getByRole("button", { name: "Grant", exact: true }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `bob may use ${PROD}` })
      .waitFor();
    await people.getByRole("cell", { name: "bob", exact: true }).waitFor();
    expect(await h.store.control.grants.mayUse("bob", prod)).toBe(true);
    await page.screenshot({ path: join(SCREENSHOTS, "people.png"), fullPage: true });

    await page.getByRole("button", { name: "Revoke bob" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `bob may no longer use ${PROD}` })
      .waitFor();
    // The list is read again once the revocation is said: bob's row goes then.
    await people.getByRole("cell", { name: "bob", exact: true }).waitFor({ state: "detached" });
    expect(await h.store.control.grants.mayUse("bob", prod)).toBe(false);

    await page.getByRole("button", { name: "Create key" }).click();
    const secretField = page.getByLabel(`New key of ${PROD}: copy it now, it is not shown again`);
    await secretField.waitFor();
    const secret = await secretField.inputValue();
    expect(secret.startsWith("act_e_")).toBe(true);
    // The key is good (it reads its environment), and its row shows its prefix, never the secret.
    expect((await h.fetch(null, "/environments", { token: secret })).status).toBe(200);
    const keys = page.getByRole("table", { name: "Keys" });
    const [row] = await h.store.control.keys.list({ environment: prod });
    await keys.getByText(`${row?.prefix}…`).waitFor();
    expect(await keys.textContent()).not.toContain(secret);

    await page.getByRole("button", { name: `Revoke key ${row?.prefix}` }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `Key ${row?.prefix}… is revoked` })
      .waitFor();
    expect((await h.fetch(null, "/environments", { token: secret })).status).toBe(401);
    // Shown once: another load of the page has the prefix, not the secret.
    await page.reload();
    await page.getByLabel("Of").selectOption(`env:${PROD}`);
    await page.getByRole("table", { name: "Keys" }).getByText(`${row?.prefix}…`).waitFor();
    expect(await page.content()).not.toContain(secret);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
