import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { launchChromium, openPage, type PageSite, servePages } from "../support/browser.ts";
import { type PackageProject, type PackedClient, packedClient, projectWithPackage } from "../support/client-package.ts";
import { dialects } from "../support/databases.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>notes</title></head>
<body>
<p>notes: <span id="notes"></span></p>
<button id="add">Add a note</button> <span id="added"></span>
<script type="module" src="/app.js"></script>
</body></html>`;

/** An app's page, importing the installed package by its name. */
const APP = `import { createClient } from "actuate/client";

const params = new URLSearchParams(location.search);
const client = createClient({ url: params.get("api"), token: params.get("token") });
const show = (id, text) => {
  document.getElementById(id).textContent = text;
};
client.subscribe({ notes: { $: { order: { serverCreatedAt: "asc" } } } }, (result) => {
  show("notes", result.notes.map((note) => note.title).join(","));
});
document.getElementById("add").onclick = async () => {
  try {
    const { output } = await client.actions["data.add-note"]({ title: "from the package", priority: 1 });
    show("added", output.id);
  } catch (error) {
    show("added", \`error: \${error.message}\`);
  }
};
`;

describe("actuate/client installed from its tarball, bundled for a page, in Chromium", () => {
  let packed: PackedClient;
  let project: PackageProject;
  let t: TestServer;
  let site: PageSite;
  let browser: Browser;

  beforeAll(async () => {
    packed = await packedClient();
    project = await projectWithPackage("client-package-page", packed.tarball);
    project.write("src/app.js", APP);
    site = await servePages({ "/app.js": join(project.dir, "src", "app.js") }, { "/": PAGE });
    t = await startTestServer(sqlite as (typeof dialects)[number], {
      release: fixture("data"),
      env: { CORS_ORIGINS: site.origin },
    });
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    site?.stop();
    await t?.stop();
    project?.remove();
    packed?.remove();
  });

  test("the bundle takes the client from the package's exports, not the repository's sources", () => {
    expect(site.scripts["/app.js"]).toContain("node_modules/actuate/client.js");
    expect(site.scripts["/app.js"]).not.toContain("src/client/");
  });

  test("the page invokes, and sees its write come back through a live query", async () => {
    const token = await t.userToken("pia");
    const { page, errors } = await openPage(browser, `${site.origin}/?api=${encodeURIComponent(t.url)}&token=${token}`);
    await page.getByRole("button", { name: "Add a note" }).click();
    await page.locator("#added", { hasText: /^[0-9a-f-]{36}$/ }).waitFor();
    await page.locator("#notes", { hasText: "from the package" }).waitFor();
    expect(errors).toEqual([]);
  }, 60_000);
});
