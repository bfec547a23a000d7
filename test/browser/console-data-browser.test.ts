import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { consoleSignedIn, DESKTOP, launchChromium, SCREENSHOTS } from "../support/browser.ts";
import { dialects } from "../support/databases.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;

describe("the console's Data and Files pages, and file inputs, in Chromium", () => {
  let t: TestServer;
  let browser: Browser;
  let ana: string;
  let ben: string;

  beforeAll(async () => {
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("console-data") });
    browser = await launchChromium();
    ana = await t.userToken("ana");
    ben = await t.userToken("ben");
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  const signedIn = (credential: string, errors: string[], width = DESKTOP.width): Promise<Page> =>
    consoleSignedIn(browser, t.url, credential, errors, { width, height: DESKTOP.height });
  const addNote = async (token: string, input: Record<string, unknown>) => {
    const body = await (await t.invoke("notes.add", input, { token })).json();
    expect(body.execution.status).toBe("succeeded");
    return body.execution.output.id as string;
  };
  const cellsOf = async (page: Page, table: string) => {
    const rows = await page.getByRole("table", { name: table }).locator("tbody tr").all();
    return Promise.all(rows.map((row) => row.locator("td").allTextContents()));
  };
  /** How wide the document is: more than the viewport means the page scrolls sideways. */
  const pageWidth = (page: Page) => page.evaluate<number>("document.documentElement.scrollWidth");
  const filesOf = async (token: string) =>
    ((await (await t.fetch("/storage/files", { token })).json()) as { items: { path: string }[] }).items.map(
      (f) => f.path,
    );

  test("the entities, a table browsed with where and order, and the playground: each user sees its own rows only", async () => {
    const milk = await addNote(ana, { title: "Buy milk", priority: 1 });
    const bread = await addNote(ana, { title: "Buy bread", priority: 5, done: true });
    const tea = await addNote(ana, { title: "Make tea", priority: 3 });
    const secret = await addNote(ben, { title: "Ben's secret", priority: 2 });

    const errors: string[] = [];
    const page = await signedIn(ana, errors);
    await page.getByRole("link", { name: "Data", exact: true }).click();
    const entities = page.getByRole("navigation", { name: "Entities" });
    await entities.getByRole("link", { name: "authors" }).waitFor();
    await entities.getByRole("link", { name: "notes" }).click();

    // The schema, from the release.
    await page.getByRole("heading", { name: "notes", exact: true }).waitFor();
    expect(await cellsOf(page, "notes attributes")).toEqual([
      ["title", "string", "required", "indexed"],
      ["priority", "number", "required", "indexed"],
      ["done", "boolean", "required", ""],
      ["ownerId", "string", "required", "indexed"],
    ]);
    await page.getByRole("listitem").filter({ hasText: "author: one authors" }).waitFor();

    // The table: ana's three notes in creation order, ben's absent.
    const rows = page.getByRole("table", { name: "notes rows" });
    await rows.getByText("Make tea").waitFor();
    expect((await cellsOf(page, "notes rows")).map((r) => r[0])).toEqual([milk, bread, tea]);

    // A where filter and an order.
    await page.getByLabel("Where (JSON)").fill('{"done": false}');
    await page.getByLabel("Order by").selectOption("priority");
    await page.getByLabel("Direction").selectOption("desc");
    await page.getByRole("button", { name: "Show rows" }).click();
    await rows.getByText("Buy bread").waitFor({ state: "detached" });
    await rows.getByText("Make tea").waitFor();
    expect(await cellsOf(page, "notes rows")).toEqual([
      [tea, "Make tea", "3", "false", "ana"],
      [milk, "Buy milk", "1", "false", "ana"],
    ]);
    // A where the server refuses is its error, shown.
    await page.getByLabel("Where (JSON)").fill('{"nope": 1}');
    await page.getByRole("button", { name: "Show rows" }).click();
    await page.getByRole("alert").filter({ hasText: "nope" }).waitFor();
    // Text that is not JSON never leaves the page.
    await page.getByLabel("Where (JSON)").fill("{done: false");
    await page.getByRole("button", { name: "Show rows" }).click();
    await page.getByRole("alert").filter({ hasText: /JSON/ }).waitFor();
    await page.getByLabel("Where (JSON)").fill('{"done": false}');
    await page.getByRole("button", { name: "Show rows" }).click();
    await rows.getByText("Make tea").waitFor();

    // The playground, as ana: objects (with a link level), then triples.
    const query = page.getByLabel("Query (InstaQL, JSON)");
    await query.fill(JSON.stringify({ notes: { $: { order: { priority: "asc" } }, author: {} } }));
    await page.getByRole("button", { name: "Run query" }).click();
    const result = page.getByTestId("query-result");
    await result.waitFor();
    const objects = JSON.parse((await result.textContent()) ?? "");
    expect(objects.notes.map((n: { title: string }) => n.title)).toEqual(["Buy milk", "Make tea", "Buy bread"]);
    expect(objects.notes[0]).toEqual({
      id: milk,
      title: "Buy milk",
      priority: 1,
      done: false,
      ownerId: "ana",
      author: null,
    });
    await page.screenshot({ path: join(SCREENSHOTS, "data.png"), fullPage: true });
    await page.getByLabel("triples").check();
    await page.getByRole("button", { name: "Run query" }).click();
    await result.filter({ hasText: '"attrs"' }).waitFor();
    const triples = JSON.parse((await result.textContent()) ?? "");
    const joinRows: unknown[][] = triples.result[0].data["datalog-result"]["join-rows"][0];
    const ids = new Set(joinRows.map((triple) => triple[0]));
    expect(ids).toEqual(new Set([milk, bread, tea]));
    expect(await result.textContent()).not.toContain("secret");
    await query.fill('{"notes": {"$": {"where": {"title": {"$regex": "x"}}}}}');
    await page.getByRole("button", { name: "Run query" }).click();
    await page.getByRole("alert").filter({ hasText: "$regex" }).waitFor();
    expect(errors).toEqual([]);
    await page.close();

    // ben, on a phone: its own note, in the table and the playground; none of ana's.
    const benErrors: string[] = [];
    const phone = await signedIn(ben, benErrors, 390);
    await phone.goto(`${t.url}/console#/data/notes`);
    await phone.getByRole("table", { name: "notes rows" }).getByText("Ben's secret").waitFor();
    expect((await cellsOf(phone, "notes rows")).map((r) => r[0])).toEqual([secret]);
    await phone.getByLabel("Query (InstaQL, JSON)").fill('{"notes": {}}');
    await phone.getByRole("button", { name: "Run query" }).click();
    const benResult = JSON.parse((await phone.getByTestId("query-result").textContent()) ?? "");
    expect(benResult.notes.map((n: { id: string }) => n.id)).toEqual([secret]);
    // The page fits the phone's width: nothing scrolls sideways but the tables' own boxes.
    expect(await pageWidth(phone)).toBeLessThanOrEqual(390);
    expect(benErrors).toEqual([]);
    await phone.close();

    // A service key is not held by view rules: every note.
    const serviceErrors: string[] = [];
    const service = await signedIn(t.serviceKey, serviceErrors);
    await service.goto(`${t.url}/console#/data/notes`);
    await service.getByRole("table", { name: "notes rows" }).getByText("Ben's secret").waitFor();
    expect((await cellsOf(service, "notes rows")).map((r) => r[0])).toEqual([milk, bread, tea, secret]);
    expect(serviceErrors).toEqual([]);
    await service.close();
  }, 90_000);

  test("files: upload through a signed URL, list, download (the same bytes), delete; another user sees none", async () => {
    const bytes = new Uint8Array(3000).map((_, i) => (i * 7 + 3) % 256);
    const errors: string[] = [];
    const page = await signedIn(ana, errors);
    await page.getByRole("link", { name: "Files", exact: true }).click();
    await page.getByText("No files.").waitFor();

    // The path defaults to the file's name; here it is given.
    await page.getByLabel("File", { exact: true }).setInputFiles({
      name: "blob.bin",
      mimeType: "application/octet-stream",
      buffer: Buffer.from(bytes),
    });
    expect(await page.getByLabel("Path", { exact: true }).inputValue()).toBe("blob.bin");
    await page.getByLabel("Path", { exact: true }).fill("reports/blob.bin");
    await page.getByRole("button", { name: "Upload", exact: true }).click();
    await page.getByRole("status").filter({ hasText: "reports/blob.bin uploaded" }).waitFor();
    await page.getByLabel("File", { exact: true }).setInputFiles({
      name: "readme.txt",
      mimeType: "text/plain",
      buffer: Buffer.from("hello"),
    });
    await page.getByRole("button", { name: "Upload", exact: true }).click();
    await page.getByRole("status").filter({ hasText: "readme.txt uploaded" }).waitFor();
    const table = page.getByRole("table", { name: "Files" });
    await table.getByText("readme.txt", { exact: true }).waitFor();
    expect((await cellsOf(page, "Files")).map((r) => r.slice(0, 4))).toEqual([
      ["readme.txt", "text/plain", "5 B", "user:ana"],
      ["reports/blob.bin", "application/octet-stream", "2.9 KiB", "user:ana"],
    ]);
    await page.screenshot({ path: join(SCREENSHOTS, "files.png"), fullPage: true });

    const [downloaded] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Download reports/blob.bin" }).click(),
    ]);
    expect(downloaded.suggestedFilename()).toBe("blob.bin");
    expect(new Uint8Array(readFileSync(await downloaded.path()))).toEqual(bytes);

    // The prefix filter.
    await page.getByLabel("Path starts with").fill("reports/");
    await page.getByLabel("Path starts with").press("Enter");
    await table.getByText("readme.txt", { exact: true }).waitFor({ state: "detached" });
    // The list is read again: wait for its rows, not just for the old ones to go.
    await table.getByText("reports/blob.bin", { exact: true }).waitFor();
    expect((await cellsOf(page, "Files")).map((r) => r[0])).toEqual(["reports/blob.bin"]);

    // ben sees none of ana's files.
    const benErrors: string[] = [];
    const benPage = await signedIn(ben, benErrors, 390);
    await benPage.getByRole("link", { name: "Files", exact: true }).click();
    await benPage.getByText("No files.").waitFor();
    expect(await pageWidth(benPage)).toBeLessThanOrEqual(390);
    expect(await filesOf(ben)).toEqual([]);
    expect(benErrors).toEqual([]);
    await benPage.close();
    // A service key sees every owner's, with the owner named.
    const servicePage = await signedIn(t.serviceKey, benErrors);
    await servicePage.getByRole("link", { name: "Files", exact: true }).click();
    await servicePage.getByRole("table", { name: "Files" }).getByText("reports/blob.bin").waitFor();
    expect((await cellsOf(servicePage, "Files")).map((r) => [r[0], r[3]])).toEqual([
      ["readme.txt", "user:ana"],
      ["reports/blob.bin", "user:ana"],
    ]);
    expect(benErrors).toEqual([]);
    await servicePage.close();

    page.once("dialog", (dialog) => dialog.accept());
    await page.getByRole("button", { name: "Delete reports/blob.bin" }).click();
    await page.getByRole("status").filter({ hasText: "reports/blob.bin deleted" }).waitFor();
    await page.getByText("No files under reports/.").waitFor();
    expect(await filesOf(ana)).toEqual(["readme.txt"]);
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  test("an action with a file input: a picker in the generated form, the execution and its upload", async () => {
    const errors: string[] = [];
    const page = await signedIn(ana, errors);
    // Signing in opens the overview.
    await page.getByRole("link", { name: "Actions", exact: true }).click();
    await page.getByRole("link", { name: "photos.caption" }).click();
    await page.getByRole("heading", { name: "photos.caption" }).waitFor();
    await page.getByLabel("caption", { exact: true }).fill("a cat");
    const picker = page.getByLabel("picture (file)");
    expect(await picker.getAttribute("accept")).toBe("image/png");
    await picker.setInputFiles({ name: "cat.png", mimeType: "image/png", buffer: Buffer.from("meow") });
    await page.getByRole("button", { name: "Run photos.caption" }).click();
    const output = page.getByTestId("output");
    await output.waitFor();
    expect(JSON.parse((await output.textContent()) ?? "")).toEqual({
      caption: "a cat",
      filename: "cat.png",
      size: 4,
      text: "meow",
    });
    await page.getByRole("list", { name: "Uploads" }).getByText("cat.png").waitFor();
    const [downloaded] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Download cat.png" }).click(),
    ]);
    expect(readFileSync(await downloaded.path(), "utf8")).toBe("meow");

    // The server recorded the upload as ana's execution's; ben sees neither.
    const listed = await (await t.fetch("/executions?action=photos.caption", { token: ana })).json();
    expect(listed.items).toHaveLength(1);
    const execution = listed.items[0];
    const path = `executions/${execution.id}/picture/cat.png`;
    expect(execution.uploads).toEqual([
      { field: "picture", path, filename: "cat.png", contentType: "image/png", size: 4 },
    ]);
    await page.getByRole("link", { name: "Files", exact: true }).click();
    await page.getByRole("table", { name: "Files" }).getByText(path).waitFor();
    expect(await filesOf(ben)).not.toContain(path);
    expect((await t.fetch(`/executions/${execution.id}`, { token: ben })).status).toBe(404);

    // A file of a type the contract does not allow: refused by the form before sending, said by the picker.
    await page.getByRole("link", { name: "Actions", exact: true }).click();
    await page.getByRole("link", { name: "photos.caption" }).click();
    await page.getByLabel("caption", { exact: true }).fill("not a png");
    await page
      .getByLabel("picture (file)")
      .setInputFiles({ name: "cat.gif", mimeType: "image/gif", buffer: Buffer.from("GIF89a") });
    await page.getByRole("button", { name: "Run photos.caption" }).click();
    await page.getByText("Of type image/gif; must be image/png.").waitFor();
    expect(await page.getByLabel("picture (file)").getAttribute("aria-invalid")).toBe("true");
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  test("nested objects and arrays in the generated form: groups, items added and removed, run again fills them", async () => {
    const errors: string[] = [];
    const page = await signedIn(ana, errors);
    await page.getByRole("link", { name: "Actions", exact: true }).click();
    await page.getByRole("link", { name: "orders.place" }).click();
    await page.getByRole("heading", { name: "orders.place" }).waitFor();
    const shipTo = page.getByRole("group", { name: "shipTo" });
    await shipTo.getByLabel("name", { exact: true }).fill("Ana");
    await shipTo.getByLabel("city (optional)").fill("Lyon");
    const lines = page.getByRole("group", { name: "lines" });
    for (let i = 0; i < 3; i++) await lines.getByRole("button", { name: "Add to lines" }).click();
    for (const [n, sku, qty] of [
      [1, "pen", "2"],
      [2, "ink", "9"],
      [3, "pad", "1"],
    ] as const) {
      const line = page.getByRole("group", { name: `lines ${n}` });
      await line.getByLabel("sku").fill(sku);
      await line.getByLabel("qty").fill(qty);
    }
    await lines.getByRole("button", { name: "Remove lines 2" }).click();
    await page.getByLabel("giftWrap (optional)").check();
    await page.getByRole("button", { name: "Run orders.place" }).click();
    const output = page.getByTestId("output");
    await output.waitFor();
    expect(JSON.parse((await output.textContent()) ?? "")).toEqual({
      summary: "Ana (Lyon): pen×2, pad×1, gift-wrapped",
    });
    const [execution] = (await (await t.fetch("/executions?action=orders.place", { token: ana })).json()).items;
    expect(execution.input).toEqual({
      shipTo: { name: "Ana", city: "Lyon" },
      lines: [
        { sku: "pen", qty: 2 },
        { sku: "pad", qty: 1 },
      ],
      giftWrap: true,
    });

    // Run again: the groups and the list come back filled from the execution's input.
    await page.goto(`${t.url}/console#/actions/orders.place?from=${execution.id}`);
    await page.getByRole("status").filter({ hasText: execution.id }).waitFor();
    expect(await page.getByRole("group", { name: "shipTo" }).getByLabel("name", { exact: true }).inputValue()).toBe(
      "Ana",
    );
    expect(await page.getByRole("group", { name: "lines 2" }).getByLabel("sku").inputValue()).toBe("pad");
    expect(await page.getByRole("group", { name: "lines 3" }).count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);
});
