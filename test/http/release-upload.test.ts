import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BuiltRelease, buildRelease } from "../../src/release/publish.ts";
import { dialects } from "../support/databases.ts";
import { answerSchemas } from "../support/openapi-schemas.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

// POST /releases: a release the CLI built, uploaded with a service key (issue #41 §2).

const LIMIT = 64 * 1024;

const upload = (body: Record<string, unknown>) => ({ bundle: "", defaultVersion: "x", ...body });

/** A bundle as the builder writes one (the SDK under its specifier) whose input schema the validator compiler refuses. */
const uncompilable = `import { defineAction, Type } from "actuate:sdk";
export default { release: undefined, actions: { "x.y": defineAction({
  description: "a schema the validator compiler does not know",
  input: Type.Object({ a: Type.Unsafe({ type: "string" }) }),
  output: Type.Object({}),
  handler: () => ({}),
}) } };`;

const fromBuilt = ({ code, defaultVersion }: BuiltRelease, extra: Record<string, unknown> = {}) => ({
  bundle: code,
  defaultVersion,
  ...extra,
});

for (const dialect of dialects) {
  describe(`POST /releases (${dialect.name})`, () => {
    let t: TestServer;
    let v2: BuiltRelease;
    let check: Awaited<ReturnType<typeof answerSchemas>>;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic"), env: { MAX_RELEASE_BYTES: String(LIMIT) } });
      v2 = await buildRelease(fixture("basic-v2"));
      check = await answerSchemas(t);
    });
    afterAll(() => t.stop());

    const post = (body: unknown, token?: string | null, headers: Record<string, string> = {}) =>
      t.fetch("/releases", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
        token,
      });

    test("no credential is 401, a user token 403, before the body is read; nothing is stored", async () => {
      const none = await post(fromBuilt(v2), null);
      expect(none.status).toBe(401);
      expect((await none.json()).error).toBe("unauthorized");
      const wrong = await post(fromBuilt(v2), "not-a-key");
      expect(wrong.status).toBe(401);
      const user = await post("x".repeat(LIMIT + 1), await t.userToken("alice"));
      expect(user.status).toBe(403);
      expect((await user.json()).error).toBe("access_denied");
      expect(await t.store.releases.get("t2")).toBeNull();
    });

    test("a service key publishes a built release: the contract diff as the CLI prints it, served before the answer", async () => {
      const res = await post(fromBuilt(v2, { publishedBy: "ci@example" }));
      expect(res.status).toBe(200);
      const answer = await res.json();
      check(answer, "PublishAnswer");
      expect(answer).toMatchObject({ version: "t2", status: "published", activated: true, previous: "t1" });
      expect(answer.changes).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ name: "test.added", change: "added" }),
          expect.objectContaining({ name: "test.version", change: "unchanged" }),
          expect.objectContaining({ name: "test.echo", change: "removed" }),
        ]),
      );
      expect(answer.scheduleChanges).toEqual([]);
      expect(t.server.releases.current()?.version).toBe("t2");
      expect((await t.invoke("test.added", {})).status).toBe(200);
      const stored = await t.store.releases.get("t2");
      expect(stored?.bundleHash).toBe(v2.hash);
      expect(stored?.publishedBy).toBe("ci@example");
    });

    test("the same content again is `existing`; the version with other content is 409 release_conflict", async () => {
      const again = await post(fromBuilt(v2));
      expect(again.status).toBe(200);
      expect(await again.json()).toMatchObject({ version: "t2", status: "existing", activated: true, previous: "t2" });

      const taken = await post(fromBuilt(v2, { version: "t1" }));
      expect(taken.status).toBe(409);
      const refusal = await taken.json();
      expect(refusal.error).toBe("release_conflict");
      expect(refusal.message).toContain("version t1 is already published with different content");
      expect(t.server.releases.current()?.version).toBe("t2");
    });

    test("activate: false stores it only; publishedBy defaults to the service key's id", async () => {
      const basic = await buildRelease(fixture("basic"));
      const res = await post(fromBuilt(basic, { version: "t1-stored", activate: false }));
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ version: "t1-stored", status: "published", activated: false });
      expect(t.server.releases.current()?.version).toBe("t2");
      expect((await t.store.releases.active()).version).toBe("t2");
      expect((await t.store.releases.get("t1-stored"))?.publishedBy).toMatch(/^service-/);
    });

    test("a malformed body is 400 invalid_request naming what is wrong, never a 500", async () => {
      // No release.ts names a version: the defaultVersion does.
      const dir = mkdtempSync(join(tmpdir(), "actuate-upload-"));
      mkdirSync(join(dir, "actions", "x"), { recursive: true });
      writeFileSync(
        join(dir, "actions", "x", "y.ts"),
        `import { defineAction, Type } from "actuate";
export default defineAction({ description: "y", input: Type.Object({}), output: Type.Object({}), handler: () => ({}) });`,
      );
      const undeclared = await buildRelease(dir);
      rmSync(dir, { recursive: true, force: true });
      const cases: [body: unknown, where: string, message: RegExp][] = [
        ["{not json", "", /not valid JSON/],
        [[], "", /body/],
        [{ defaultVersion: "x" }, "/bundle", /bundle/],
        [upload({ bundle: 5 }), "/bundle", /bundle/],
        [fromBuilt(v2, { version: "no spaces" }), "/version", /version/],
        [fromBuilt(v2, { force: "yes" }), "/force", /force/],
        [fromBuilt(v2, { extra: 1 }), "/extra", /extra/],
        [upload({ bundle: "export default {" }), "/bundle", /release code failed while loading/],
        [upload({ bundle: "export default 1;" }), "/bundle", /no actions export/],
        [upload({ bundle: 'export default { actions: { "x.y": {} } };' }), "/bundle", /must default-export/],
        [upload({ bundle: uncompilable }), "/bundle", /actions\/x\/y: its schemas do not compile: .*Unknown type/],
        [fromBuilt(undeclared, { defaultVersion: "v 2" }), "/bundle", /version "v 2" is not valid/],
      ];
      for (const [body, where, message] of cases) {
        const res = await post(body);
        const refusal = await res.json();
        expect({ body, status: res.status, error: refusal.error }).toEqual({
          body,
          status: 400,
          error: "invalid_request",
        });
        expect(refusal.details.issues[0].where).toBe(where);
        expect(refusal.message).toMatch(message);
      }
      const deep = `${"[".repeat(100)}${"]".repeat(100)}`;
      expect((await post(deep)).status).toBe(400);
    });

    test("a body over MAX_RELEASE_BYTES is 413, declared or streamed", async () => {
      const big = JSON.stringify(upload({ bundle: "x".repeat(LIMIT) }));
      const declared = await post(big);
      expect(declared.status).toBe(413);
      expect(await declared.json()).toMatchObject({ error: "payload_too_large", details: { limitBytes: LIMIT } });
      const chunks = new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(big));
          controller.close();
        },
      });
      const streamed = await t.fetch("/releases", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: chunks,
      });
      expect(streamed.status).toBe(413);
    });
  });

  describe(`POST /releases: schema changes (${dialect.name})`, () => {
    test("a release that would orphan stored data is 409 unless force", async () => {
      const t = await startTestServer(dialect, { release: fixture("data") });
      const dir = mkdtempSync(join(tmpdir(), "actuate-upload-"));
      try {
        const added = await t.invoke("data.add-user", { email: "x@example.com", name: "X" });
        expect((await added.json()).execution.status).toBe("succeeded");
        cpSync(fixture("data"), dir, { recursive: true });
        writeFileSync(
          join(dir, "release.ts"),
          `import { defineRelease, Type } from "actuate";
export default defineRelease({ entities: { notes: { title: Type.String() } } });`,
        );
        const built = await buildRelease(dir);
        const send = (extra: Record<string, unknown>) =>
          t.fetch("/releases", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(fromBuilt(built, { version: "d2", ...extra })),
          });
        const refused = await send({});
        expect(refused.status).toBe(409);
        expect(await refused.json()).toMatchObject({
          error: "release_conflict",
          message: expect.stringContaining("entity users is removed but has 1 rows"),
        });
        expect(await t.store.releases.get("d2")).toBeNull();
        const forced = await send({ force: true });
        expect(forced.status).toBe(200);
        expect(await forced.json()).toMatchObject({ version: "d2", status: "published", activated: true });
      } finally {
        rmSync(dir, { recursive: true, force: true });
        await t.stop();
      }
    }, 60_000);
  });
}
