import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReleaseError } from "../../src/release/errors.ts";
import { openGate } from "../fixtures/releases/basic/lib/probe.ts";
import { dialects } from "../support/databases.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const versionOf = async (t: TestServer, gate?: string) => {
  const res = await t.invoke("test.version", gate ? { gate } : {});
  return (await res.json()).execution;
};

for (const dialect of dialects) {
  describe(`releases (${dialect.name})`, () => {
    let t: TestServer;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic") });
    });
    afterAll(() => t.stop());

    test("publishing switches the live release; a request in flight finishes on the release it started with", async () => {
      const gate = crypto.randomUUID();
      const inFlight = versionOf(t, gate);
      await eventually(async () => {
        const list = await (await t.fetch("/executions?action=test.version&status=running")).json();
        return list.items.length === 1;
      });

      const published = await t.publish(fixture("basic-v2"));
      expect(published.version).toBe("t2");
      expect(published.changes).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ name: "test.added", change: "added" }),
          expect.objectContaining({ name: "test.version", change: "unchanged" }),
          expect.objectContaining({ name: "test.echo", change: "removed" }),
        ]),
      );
      // The running server learns of it by polling the store, as it would from the CLI or another instance.
      await eventually(() => t.server.releases.current()?.version === "t2");
      const during = await versionOf(t);
      expect(during).toMatchObject({ output: { release: "t2" }, releaseVersion: "t2" });
      expect((await t.invoke("test.added", {})).status).toBe(200);
      expect((await t.invoke("test.echo", { text: "gone" })).status).toBe(404);

      openGate(gate);
      expect(await inFlight).toMatchObject({ status: "succeeded", output: { release: "t1" }, releaseVersion: "t1" });
    });

    test("activating an earlier version rolls back", async () => {
      await t.store.releases.activate("t1", Date.now());
      await eventually(() => t.server.releases.current()?.version === "t1");
      expect((await versionOf(t)).output).toEqual({ release: "t1" });
      expect((await t.invoke("test.added", {})).status).toBe(404);
    });

    test("publishing a version again with different content is refused; the same content is a no-op", async () => {
      const again = await t.publish(fixture("basic"));
      expect(again.status).toBe("existing");
      await expect(t.publish(fixture("basic-v2"), "t1")).rejects.toThrow(ReleaseError);
      await expect(t.publish(fixture("basic-v2"), "t1")).rejects.toThrow(/already published with different content/);
      expect((await t.store.releases.get("t1"))?.bundleHash).toBe(again.release.hash);
    });

    test("a data schema that cannot compile refuses the release with a ReleaseError naming the problem", async () => {
      const dir = mkdtempSync(join(tmpdir(), "actuate-release-"));
      cpSync(fixture("basic"), dir, { recursive: true });
      writeFileSync(
        join(dir, "release.ts"),
        `import { defineRelease, Type } from "actuate";
export default defineRelease({
  entities: { notes: { title: Type.String() } },
  links: { noteAuthor: { forward: { on: "notes", has: "one", label: "author" }, reverse: { on: "users", has: "many", label: "notes" } } },
});`,
      );
      const refused = t.publish(dir, "bad-schema");
      await expect(refused).rejects.toThrow(ReleaseError);
      await expect(t.publish(dir, "bad-schema")).rejects.toThrow('release.ts: link noteAuthor: no entity "users"');
      expect(await t.store.releases.get("bad-schema")).toBeNull();
    });

    test("the contract hash changes with the contract and only with it", async () => {
      const dir = mkdtempSync(join(tmpdir(), "actuate-release-"));
      cpSync(fixture("basic"), dir, { recursive: true });
      const before = (await t.publish(dir, "hash-a")).release.manifest.actions;
      writeFileSync(
        join(dir, "actions/test/fail.ts"),
        (await Bun.file(join(dir, "actions/test/fail.ts")).text()).replace("Always fails", "Fails"),
      );
      const describedOnly = (await t.publish(dir, "hash-b")).release.manifest.actions;
      const echo = join(dir, "actions/test/echo.ts");
      writeFileSync(echo, (await Bun.file(echo).text()).replace("minLength: 1", "minLength: 2"));
      const after = (await t.publish(dir, "hash-c")).release.manifest.actions;
      const hash = (list: typeof before, name: string) => list.find((a) => a.name === name)?.contractHash;
      expect(hash(describedOnly, "test.fail")).toBe(hash(before, "test.fail"));
      expect(hash(after, "test.echo")).not.toBe(hash(before, "test.echo"));
      expect(hash(after, "test.count")).toBe(hash(before, "test.count"));
    });

    test("a release that does not build or breaks the rules is refused with a clear message", async () => {
      const dir = mkdtempSync(join(tmpdir(), "actuate-release-"));
      cpSync(fixture("basic"), dir, { recursive: true });
      writeFileSync(join(dir, "actions/test/broken.ts"), "export default {");
      await expect(t.publish(dir, "broken-1")).rejects.toThrow(/does not build/);
      writeFileSync(join(dir, "actions/test/broken.ts"), "export default { handler() {} };");
      await expect(t.publish(dir, "broken-2")).rejects.toThrow(
        /actions\/test\/broken must default-export defineAction/,
      );
      await expect(t.publish(join(dir, "missing"))).rejects.toThrow(/release folder not found/);
      // A server compiles validators on first use; publishing compiles them all, so this is refused now.
      writeFileSync(
        join(dir, "actions/test/broken.ts"),
        `import { defineAction, Type } from "actuate";
export default defineAction({
  description: "a schema the validator compiler does not know",
  input: Type.Object({ a: Type.Unsafe({ type: "string" }) }),
  output: Type.Object({}),
  handler: () => ({}),
});`,
      );
      await expect(t.publish(dir, "broken-3")).rejects.toThrow(/Unknown type/);
      for (const version of ["broken-1", "broken-3"]) expect(await t.store.releases.get(version)).toBeNull();
    });

    test("a file that does not build, imports what is missing or throws while loading is named with its line", async () => {
      const dir = mkdtempSync(join(tmpdir(), "actuate-release-"));
      cpSync(fixture("basic"), dir, { recursive: true });
      const broken = (lines: string[]) => writeFileSync(join(dir, "actions/test/broken.ts"), lines.join("\n"));
      const header = 'import { defineAction, Type } from "actuate";';
      const action =
        'export default defineAction({ description: "x", input: Type.Object({}), output: Type.Object({}), handler: () => table });';

      broken([header, "const table = { a: 1,, };", action]);
      await expect(t.publish(dir, "broken-syntax")).rejects.toThrow(
        '\n  actions/test/broken.ts:2:22: Expected identifier but found ","\n      const table = { a: 1,, };',
      );

      broken([header, 'import { table } from "../../lib/missing.ts";', action]);
      await expect(t.publish(dir, "broken-import")).rejects.toThrow(
        '\n  actions/test/broken.ts:2:23: Could not resolve: "../../lib/missing.ts"',
      );

      broken([header, "", 'const table = JSON.parse("{oops");', action]);
      await expect(t.publish(dir, "broken-load")).rejects.toThrow(
        "release code failed while loading at actions/test/broken.ts:3:",
      );
    });

    test("one content is compiled once per process: the release a server loads is the one publishing compiled", async () => {
      const published = await t.publish(fixture("basic"), "t1-again");
      const served = await t.server.releases.version("t1-again");
      expect(served.version).toBe("t1-again");
      // The same compiled actions (validators included), not a second compilation of the same bundle.
      expect(served.actions).toBe(published.release.actions);
    });
  });
}
