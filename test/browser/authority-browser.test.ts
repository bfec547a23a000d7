import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type Browser, chromium } from "playwright-core";
import { addUser } from "../../src/auth/users.ts";
import { dialects } from "../support/databases.ts";
import { beginSignIn, REDIRECT } from "../support/oauth-client.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

/** Debian's chromium (.ci/run installs it): the sign-in as a person does it, in a real browser. */
const CHROMIUM = "/usr/bin/chromium";
const [sqlite] = dialects;

describe("signing in from an agent, in Chromium", () => {
  let t: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`);
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("claims") });
    await addUser(t.store, "alice", "correct horse battery staple");
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  test("the agent opens the sign-in page; alice signs in and allows it; its tool calls act as alice", async () => {
    const { provider, transport, authorizationUrl } = await beginSignIn(t.url);

    const page = await browser.newPage();
    // The agent's redirect URI: the browser lands there with the code, as it would on the agent's listener.
    const landed = new Promise<URL>((resolve) =>
      page.route(`${REDIRECT}**`, (route) => {
        resolve(new URL(route.request().url()));
        return route.fulfill({ contentType: "text/plain", body: "you can close this window" });
      }),
    );
    await page.goto(authorizationUrl.toString());
    expect(await page.title()).toContain("Sign in");
    await page.getByLabel("User").fill("alice");
    await page.getByLabel("Password").fill("correct horse battery staple");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: /Allow Test Agent/ }).waitFor();
    await page.getByRole("button", { name: "Allow" }).click();
    const code = (await landed).searchParams.get("code");
    expect(code).toBeTruthy();

    await transport.finishAuth(code as string);
    const client = new Client({ name: "agent", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { authProvider: provider }));
    try {
      const result = (await client.callTool({ name: "whoami.get", arguments: {} })) as { structuredContent?: unknown };
      expect(result.structuredContent).toEqual({ kind: "user", id: "alice", role: null });
    } finally {
      await client.close();
    }
  }, 60_000);
});
