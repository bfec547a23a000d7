import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { revokeUserToken } from "../../src/auth/tokens.ts";
import { addUser } from "../../src/auth/users.ts";
import { openGate } from "../fixtures/releases/basic/lib/probe.ts";
import { launchChromium, SCREENSHOTS } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const PASSWORD = "correct horse battery staple";
const [sqlite] = dialects;

// The console's built-in sign-in, live executions list, "run again" and the releases diff (issue #19).
describe("the console, live, in Chromium", () => {
  let t: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("console-v1") });
    await addUser(t.store, "alice", PASSWORD);
    browser = await launchChromium();
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

    // Signing out in the page the redirect came back to: a plain sign-in page, not the spent code again.
    await page.getByRole("button", { name: "Sign out" }).click();
    const builtIn = page.getByRole("button", { name: "Continue with this environment's sign-in page" });
    await builtIn.waitFor();
    // Enabled once whatever the page did on showing has settled (an exchange of the spent code would fail then).
    await page.waitForFunction(
      (button) => !(button as { disabled: boolean } | null)?.disabled,
      await builtIn.elementHandle(),
    );
    expect(await page.getByRole("alert").count()).toBe(0);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

    // The token's end is known (expires_in): when it comes, the console says so and forgets it.
    await page.evaluate(
      ([t]) => {
        sessionStorage.setItem("actuate.console.credential", t as string);
        sessionStorage.setItem("actuate.console.expires-at", String(Date.now() + 1_000));
      },
      [token],
    );
    await page.reload();
    await page.getByRole("status").filter({ hasText: "Your sign-in expired" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem("actuate.console.credential"))).toBeNull();

    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("a remembered client the authority no longer knows (a database reset) does not block signing in", async () => {
    const errors: string[] = [];
    const page = await newPage(errors);
    await page.goto(`${t.url}/console`);
    const stale = JSON.stringify({ clientId: "deleted-client", redirectUri: `${t.url}/console` });
    await page.evaluate((value) => localStorage.setItem("actuate.console.oauth-client", value), stale);
    const refused = page.waitForResponse((r) => r.url().includes("/oauth/auth"));
    await page.getByRole("button", { name: "Continue with this environment's sign-in page" }).click();
    expect((await refused).status()).toBe(400);
    // The person comes back to the console: it says so, and the next attempt registers it again.
    await page.goto(`${t.url}/console`);
    await page.getByRole("alert").filter({ hasText: "did not come back" }).waitFor();
    expect(await page.evaluate(() => localStorage.getItem("actuate.console.oauth-client"))).toBeNull();
    await signInAsAlice(page);
    expect(new URL(page.url()).search).toBe("");
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("an execution made elsewhere appears without a reload; filters narrow the list and live in the URL; run again fills the form", async () => {
    const errors: string[] = [];
    const page = await newPage(errors);
    await page.goto(`${t.url}/console`);
    await page.getByLabel("Token or service key").fill(t.serviceKey);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("link", { name: "Executions", exact: true }).click();
    const table = page.getByRole("table", { name: "Executions" });
    await table.waitFor();

    // Other clients, other callers: the open list follows.
    const carol = await t.userToken("carol");
    const dave = await t.userToken("dave");
    const tea = (
      await (await t.invoke("shop.order", { item: "tea", quantity: 2, size: "large" }, { token: carol })).json()
    ).execution.id as string;
    await table.getByRole("link", { name: tea }).waitFor();
    const failed = await (await t.invoke("shop.order", { item: "broken" }, { token: dave })).json();
    expect(failed.execution).toMatchObject({ status: "failed", errorCode: "action_failed" });
    const broken = failed.execution.id as string;
    await table.getByRole("link", { name: broken }).waitFor();
    const whoami = (await (await t.invoke("shop.whoami", {}, { token: dave })).json()).execution.id as string;
    await table.getByRole("link", { name: whoami }).waitFor();

    // Status: only the failed one.
    await page.getByLabel("Status").selectOption("failed");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await table.getByRole("link", { name: tea }).waitFor({ state: "detached" });
    await table.getByRole("link", { name: broken }).waitFor();
    expect(await table.getByRole("link").count()).toBe(1);

    // Caller and action: dave's orders (none succeeded: the broken one), in a URL that can be shared.
    await page.getByLabel("Status").selectOption("");
    await page.getByLabel("Caller").fill("user:dave");
    await page.getByLabel("Action").fill("shop.order");
    // The list before (failed ones) held the broken order alone too: the answer to the new filters, not
    // the table, tells the two apart (the table empties while it loads, then shows that answer).
    const daveOrders = page.waitForResponse((response) => {
      const url = new URL(response.url());
      return (
        url.pathname === "/executions" &&
        url.searchParams.get("caller") === "user:dave" &&
        url.searchParams.get("action") === "shop.order"
      );
    });
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.waitForURL(/caller=user%3Adave/);
    expect(new URL(page.url()).hash).toContain("action=shop.order");
    const answered = (await (await daveOrders).json()) as { items: { id: string }[] };
    expect(answered.items.map((execution) => execution.id)).toEqual([broken]);
    const shown = await eventually(async () => {
      // Each link shows a short id; its title holds the whole one.
      const links = await Promise.all((await table.getByRole("link").all()).map((link) => link.getAttribute("title")));
      return links.length > 0 && links;
    });
    expect(shown).toEqual([broken]);

    // Time: since a minute from now, nothing yet.
    await page.getByLabel("Caller").fill("");
    await page.getByLabel("Action").fill("");
    const ahead = new Date(Date.now() + 60 * 60_000);
    const local = new Date(ahead.getTime() - ahead.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await page.getByLabel("Since").fill(local);
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.getByText("No execution matches these filters.").waitFor();

    // The shared URL, opened in a fresh tab signed in as the same key, shows the same filtered view.
    const shared = `${t.url}/console#/executions?action=shop.order&caller=user%3Acarol`;
    await page.goto(shared);
    await page.reload();
    await table.getByRole("link", { name: tea }).waitFor();
    expect(await page.getByLabel("Caller").inputValue()).toBe("user:carol");
    expect(await table.getByRole("link").count()).toBe(1);
    await page.screenshot({ path: join(SCREENSHOTS, "executions.png"), fullPage: true });

    // Run again: the detail's input fills the action's form, and running it makes a new execution.
    await table.getByRole("link", { name: tea }).click();
    await page.getByTestId("logs").filter({ hasText: "ordering tea" }).waitFor();
    await page.getByRole("link", { name: "Run again with this input" }).click();
    await page.getByRole("heading", { name: "shop.order" }).waitFor();
    expect(await page.getByLabel("item", { exact: true }).inputValue()).toBe("tea");
    expect(await page.getByLabel("quantity (optional)").inputValue()).toBe("2");
    expect(await page.getByLabel("size (optional)").inputValue()).toBe("large");
    await page.getByLabel("quantity (optional)").fill("3");
    await page.getByRole("button", { name: "Run shop.order" }).click();
    const output = page.getByTestId("output");
    await output.waitFor();
    expect(JSON.parse((await output.textContent()) ?? "")).toEqual({ item: "tea", quantity: 3 });
    expect(errors).toEqual([]);
    await page.close();

    // Another user cannot run again from carol's execution: it is not theirs to read, and nothing is filled in.
    const daveErrors: string[] = [];
    const davePage = await newPage(daveErrors);
    await davePage.goto(`${t.url}/console#/actions/shop.order?from=${tea}`);
    await davePage.getByLabel("Token or service key").fill(dave);
    await davePage.getByRole("button", { name: "Sign in", exact: true }).click();
    await davePage.getByRole("alert").filter({ hasText: "not one of shop.order you may see" }).waitFor();
    expect(await davePage.getByLabel("item", { exact: true }).inputValue()).toBe("");
    expect(daveErrors).toEqual([]);
    await davePage.close();
  }, 90_000);

  test("an execution's page follows it while it runs, over the session socket", async () => {
    const errors: string[] = [];
    const page = await newPage(errors);
    const erin = await t.userToken("erin");
    // Opened on signing in (the overview's figures follow executions live); this page uses it too.
    const socket = page.waitForEvent("websocket", (ws) => ws.url().endsWith("/session"));
    await page.goto(`${t.url}/console`);
    await page.getByLabel("Token or service key").fill(erin);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("navigation", { name: "Pages" }).waitFor();

    const gate = `pack-${crypto.randomUUID()}`;
    const answer = t.invoke("shop.pack", { gate }, { token: erin });
    const running = await eventually(async () => {
      const listed = await (await t.fetch("/executions?action=shop.pack&status=running", { token: erin })).json();
      return listed.items[0]?.id as string | undefined;
    });
    await page.goto(`${t.url}/console#/executions/${running}`);
    await page.getByTestId("status").filter({ hasText: "running" }).waitFor();
    await page.getByTestId("logs").filter({ hasText: "packing" }).waitFor();
    await socket;

    openGate(gate);
    expect((await answer).status).toBe(200);
    await page.getByTestId("status").filter({ hasText: "succeeded" }).waitFor();
    await page.getByTestId("logs").filter({ hasText: "packed" }).waitFor();
    expect(JSON.parse((await page.getByTestId("output").textContent()) ?? "")).toEqual({ packed: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("the releases page shows what changed between two published releases", async () => {
    await t.publish(fixture("console-v2"));
    const errors: string[] = [];
    const page = await newPage(errors);
    await page.goto(`${t.url}/console#/releases`);
    await page.getByLabel("Token or service key").fill(t.serviceKey);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("table", { name: "Releases" }).getByText("c2").waitFor();
    // By default the newest against the one before it.
    expect(await page.getByLabel("From", { exact: true }).inputValue()).toBe("c1");
    expect(await page.getByLabel("To", { exact: true }).inputValue()).toBe("c2");
    await page.getByRole("button", { name: "Compare" }).click();
    const changes = page.getByRole("article", { name: "Changes from c1 to c2" });
    await changes.waitFor();
    expect(await changes.getByRole("listitem").filter({ hasText: "shop.refund" }).count()).toBe(1);
    expect(await changes.getByRole("listitem").filter({ hasText: "shop.cancel" }).count()).toBe(1);
    const order = changes.getByRole("region", { name: "Changes to shop.order" });
    expect(await order.getByRole("listitem").allTextContents()).toEqual([
      'access: "authenticated" → "service"',
      "input size: removed",
      'input gift: added (required): {"type":"boolean"}',
    ]);
    expect(await changes.getByText("Unchanged: shop.pack, shop.whoami.").count()).toBe(1);
    await page.screenshot({ path: join(SCREENSHOTS, "release-diff.png"), fullPage: true });

    // The other way round, the same change undone.
    await page.getByLabel("From", { exact: true }).selectOption("c2");
    await page.getByLabel("To", { exact: true }).selectOption("c1");
    await page.getByRole("button", { name: "Compare" }).click();
    await page
      .getByRole("article", { name: "Changes from c2 to c1" })
      .getByRole("region", { name: "Changes to shop.order" })
      .getByText("input gift: removed")
      .waitFor();
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  test("a revoked or ended sign-in sends the person back to sign in, saying why", async () => {
    const errors: string[] = [];
    const page = await newPage(errors);
    await page.goto(`${t.url}/console`);
    const token = await t.userToken("bob");
    await page.getByLabel("Token or service key").fill(token);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
    // The executions list follows the session socket while it is open: the server closes it (4001) once revoked.
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

describe("the console with an external identity provider, in Chromium", () => {
  let t: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    // The environment's users sign in elsewhere: it has no built-in sign-in to offer.
    t = await startTestServer(sqlite as (typeof dialects)[number], {
      release: fixture("console-v1"),
      env: { AUTH_ISSUER: "http://127.0.0.1:9/issuer" },
    });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  test("only the paste form is offered, and it signs in", async () => {
    const errors: string[] = [];
    const page = await browser.newPage();
    page.on("pageerror", (error) => errors.push(error.message));
    // The metadata request settles before the page is judged: it answers 404 here.
    const metadata = page.waitForResponse((r) => r.url().endsWith("/.well-known/oauth-authorization-server"));
    await page.goto(`${t.url}/console`);
    expect((await metadata).status()).toBe(404);
    await page.getByLabel("Token or service key").fill(t.serviceKey);
    expect(await page.getByRole("button").allTextContents()).toEqual(["Sign in"]);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
