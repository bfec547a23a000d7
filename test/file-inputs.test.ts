import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dialects } from "./support/databases.ts";
import { fixture, startTestServer, type TestServer } from "./support/server.ts";

for (const dialect of dialects) {
  describe(`file inputs (${dialect.name})`, () => {
    let t: TestServer;
    let alice: string;
    const invoke = (parts: { request: unknown; files?: Record<string, File> }, token?: string | null) => {
      const form = new FormData();
      form.set("request", JSON.stringify(parts.request));
      for (const [field, file] of Object.entries(parts.files ?? {})) form.set(field, file);
      return t.fetch("/actions/test.attach/invoke", { method: "POST", body: form, token });
    };
    const png = (text: string, name = "cat.png") => new File([text], name, { type: "image/png" });

    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic") });
      alice = await t.userToken("alice");
    });
    afterAll(() => t.stop());

    test("a multipart invoke stores the files as the execution's uploads; the handler reads them", async () => {
      const requestId = crypto.randomUUID();
      const res = await invoke(
        { request: { requestId, input: { note: "hi" } }, files: { picture: png("meow", "../../cat.png") } },
        alice,
      );
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body.execution).toMatchObject({
        status: "succeeded",
        output: { size: 4, text: "meow", filename: "cat.png", hasExtra: false },
      });
      expect(body.uploads).toEqual([
        {
          field: "picture",
          path: `executions/${body.execution.id}/picture/cat.png`,
          filename: "cat.png",
          contentType: "image/png",
          size: 4,
        },
      ]);
      const followed = await (await t.fetch(`/executions/${body.execution.id}`, { token: alice })).json();
      expect(followed.uploads).toEqual(body.uploads);
      const { url } = await (
        await t.fetch(`/storage/signed-download-url?filename=${body.uploads[0].path}`, { token: alice })
      ).json();
      expect(await (await fetch(url)).text()).toBe("meow");
      const bob = await t.userToken("bob");
      expect(
        (await t.fetch(`/storage/signed-download-url?filename=${body.uploads[0].path}`, { token: bob })).status,
      ).toBe(404);

      const replay = await (
        await invoke(
          { request: { requestId, input: { note: "hi" } }, files: { picture: png("meow", "../../cat.png") } },
          alice,
        )
      ).json();
      expect(replay.execution.id).toBe(body.execution.id);
      expect(replay.uploads).toHaveLength(1);
      const conflict = await invoke(
        { request: { requestId, input: { note: "hi" } }, files: { picture: png("woof", "../../cat.png") } },
        alice,
      );
      expect(conflict.status).toBe(409);
    });

    test("missing, too large, or of a type not listed: 400 with an issue at /input/<field>; nothing stored", async () => {
      const cases: [Record<string, File>, string][] = [
        [{}, "file_required"],
        [{ picture: new File([new Uint8Array(5_000_001)], "big.png", { type: "image/png" }) }, "file_too_large"],
        [{ picture: new File(["x"], "cat.gif", { type: "image/gif" }) }, "file_type_not_allowed"],
      ];
      for (const [files, code] of cases) {
        const requestId = crypto.randomUUID();
        const res = await invoke({ request: { requestId, input: { note: "x" } }, files }, alice);
        expect(res.status, code).toBe(400);
        const body = await res.json();
        expect(body.error).toBe("action_contract_validation_failed");
        expect(body.details.issues).toContainEqual(expect.objectContaining({ where: "/input/picture", code }));
        expect((await t.fetch(`/executions/requests/${requestId}`, { token: alice })).status).toBe(404);
      }
    });

    test("a malformed multipart invoke is 400 invalid_request", async () => {
      const form = new FormData();
      form.set("request", "{not json");
      const res = await t.fetch("/actions/test.attach/invoke", { method: "POST", body: form, token: alice });
      expect(res.status).toBe(400);
      expect((await res.json()).error).toBe("invalid_request");
      const noRequest = new FormData();
      noRequest.set("picture", png("x"));
      expect(
        (await (await t.fetch("/actions/test.attach/invoke", { method: "POST", body: noRequest, token: alice })).json())
          .error,
      ).toBe("invalid_request");
    });
  });
}
