import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "../../src/client/index.ts";
import type { Release } from "../fixtures/types/release.gen.ts";
import { cli, repoRoot } from "../support/cli.ts";
import { dialects } from "../support/databases.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;
const dialect = sqlite as (typeof dialects)[number];

// Only the first line (the source it was made from) differs between a folder's and an environment's text.
const body = (text: string) => text.split("\n").slice(1).join("\n");

describe("typed queries against a real server answer the shapes their types say", () => {
  let t: TestServer;
  let client: ReturnType<typeof createClient<Release>>;
  beforeAll(async () => {
    t = await startTestServer(dialect, { release: fixture("typed-client") });
    client = createClient<Release>({ url: t.url, token: t.serviceKey });
    const { output: frank } = await client.actions["library.add-author"]({ name: "Frank" });
    await client.actions["library.add-book"]({ title: "Dune", pages: 412, authorId: frank.id });
    await client.actions["library.add-book"]({ title: "Anonymous", pages: 90 });
  }, 60_000);
  afterAll(async () => {
    client?.close();
    await t?.stop();
  });

  test("the Release the tests type with is what the environment describes (links and file fields included)", async () => {
    const scratch = mkdtempSync(join(tmpdir(), "actuate-typed-"));
    try {
      const out = join(scratch, "release.gen.ts");
      const generated = await cli(["release", "types", "--url", t.url, "--out", out], {
        DATA_DIR: t.config.dataDir,
        ACTUATE_TOKEN: t.serviceKey,
      });
      expect(generated.code).toBe(0);
      const committed = readFileSync(join(repoRoot, "test", "fixtures", "types", "release.gen.ts"), "utf8");
      expect(body(readFileSync(out, "utf8"))).toBe(body(committed));
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 60_000);

  test("a has-one link answers an object or null, a has-many an array, nested as asked", async () => {
    const answer = await client.query({
      books: { $: { order: { title: "asc" } }, author: { profile: {} } },
      authors: { books: { $: { where: { pages: { $gt: 100 } } } } },
    });
    const [anonymous, dune] = answer.books;
    expect(anonymous?.title).toBe("Anonymous");
    expect(anonymous?.author).toBeNull();
    const author: { name: string; profile: { bio: string } | null } | null | undefined = dune?.author;
    expect(author).toMatchObject({ name: "Frank", profile: null });
    const books: { title: string }[] | undefined = answer.authors[0]?.books;
    expect(books?.map((b) => b.title)).toEqual(["Dune"]);

    const byAuthor = await client.query({ books: { $: { where: { "author.name": { $ilike: "fr%" } } } } });
    expect(byAuthor.books.map((b) => b.title)).toEqual(["Dune"]);

    const triples = await client.query({ authors: {} }, { format: "triples" });
    expect(triples.result[0]?.data["datalog-result"]["join-rows"][0]?.some(([, , value]) => value === "Frank")).toBe(
      true,
    );
  });

  test("a live query answers the same shapes", async () => {
    let latest: { title: string; author: { name: string } | null }[] = [];
    const stop = client.subscribe({ books: { $: { order: { title: "asc" } }, author: {} } }, (result) => {
      latest = result.books;
    });
    try {
      await eventually(() => latest.length === 2);
      expect(latest.map((b) => [b.title, b.author?.name ?? null])).toEqual([
        ["Anonymous", null],
        ["Dune", "Frank"],
      ]);
    } finally {
      stop();
    }
  });

  test("an action's file fields go in options.files, apart from its input", async () => {
    const picture = new Blob(["four"], { type: "image/png" });
    const { output } = await client.actions["media.attach"]({ caption: "cover" }, { files: { picture } });
    expect(output).toEqual({ caption: "cover", pictureSize: 4, scanSize: null });
  });
});
