import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { launchChromium } from "../support/browser.ts";
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
  let script: string;
  let t: TestServer;
  let site: ReturnType<typeof Bun.serve>;
  let browser: Browser;

  beforeAll(async () => {
    packed = await packedClient();
    project = await projectWithPackage("client-package-page", packed.tarball);
    project.write("src/app.js", APP);
    const built = await Bun.build({ entrypoints: [join(project.dir, "src", "app.js")], target: "browser" });
    if (!built.success) throw new AggregateError(built.logs, "the page did not build");
    script = await (built.outputs[0] as Blob).text();
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
      release: fixture("data"),
      env: { CORS_ORIGINS: `http://localhost:${site.port}` },
    });
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    site?.stop(true);
    await t?.stop();
    project?.remove();
    packed?.remove();
  });

  test("the bundle takes the client from the package's exports, not the repository's sources", () => {
    expect(script).toContain("node_modules/actuate/client.js");
    expect(script).not.toContain("src/client/");
  });

  test("the page invokes, and sees its write come back through a live query", async () => {
    const token = await t.userToken("pia");
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    await page.goto(`http://localhost:${site.port}/?api=${encodeURIComponent(t.url)}&token=${token}`);
    await page.getByRole("button", { name: "Add a note" }).click();
    await page.locator("#added", { hasText: /^[0-9a-f-]{36}$/ }).waitFor();
    await page.locator("#notes", { hasText: "from the package" }).waitFor();
    expect(errors).toEqual([]);
  }, 60_000);
});
