import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spoolDirOf } from "../../src/http/spool.ts";
import { serve } from "../support/cli.ts";
import { dialects } from "../support/databases.ts";
import { eventually, fixture, startTestServer, type TestResponse, type TestServer } from "../support/server.ts";
import { storages, storedText } from "../support/storages.ts";
import { filledStream, MiB, multipartStream, type PartSpec, watchRss } from "../support/streams.ts";

/** A server's spool files: none may outlive the invocation that wrote them. */
const spooledIn = (dataDir: string) => {
  const dir = spoolDirOf(dataDir);
  return existsSync(dir) ? readdirSync(dir) : [];
};

for (const dialect of dialects) {
  for (const storage of storages) {
    describe(`file inputs on ${storage.name} (${dialect.name})`, () => {
      let t: TestServer;
      let alice: string;
      const spooled = () => spooledIn(t.config.dataDir);
      const invoke = (parts: { request: unknown; files?: Record<string, File> }, token?: string | null) => {
        const form = new FormData();
        form.set("request", JSON.stringify(parts.request));
        for (const [field, file] of Object.entries(parts.files ?? {})) form.set(field, file);
        return t.fetch("/actions/test.attach/invoke", { method: "POST", body: form, token });
      };
      const png = (text: string, name = "cat.png") => new File([text], name, { type: "image/png" });
      const invokeStreamed = (parts: PartSpec[], contentType?: string, action = "test.attach") => {
        const multipart = multipartStream(parts);
        return t.fetch(`/actions/${action}/invoke`, {
          method: "POST",
          headers: { "content-type": contentType ?? multipart.contentType },
          body: multipart.body,
          token: alice,
        });
      };
      const requestPart = (requestId: string, note = "x"): PartSpec => ({
        name: "request",
        body: JSON.stringify({ requestId, input: { note } }),
      });
      const picturePart: PartSpec = { name: "picture", filename: "p.png", contentType: "image/png", body: "png" };

      beforeAll(async () => {
        const env = {
          ...(await storage.env()),
          MAX_FILE_BYTES: String(6 * MiB),
          MAX_MULTIPART_BYTES: String(10 * MiB),
        };
        t = await startTestServer(dialect, { release: fixture("basic"), env });
        alice = await t.userToken("alice");
      });
      afterAll(async () => {
        await t.stop();
        await storage.release();
      });

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
        const stored = await t.store.files.get(body.uploads[0].path);
        expect(stored).toMatchObject({
          ownerId: "alice",
          sha256: new Bun.CryptoHasher("sha256").update("meow").digest("hex"),
        });
        expect(await storedText(t.config, body.uploads[0].path)).toBe("meow");
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
        expect(replay.uploads).toEqual(body.uploads);
        // Nothing stored again: the file's row was not rewritten and the bytes are the first ones.
        expect((await t.store.files.get(body.uploads[0].path))?.updatedAt).toBe(stored?.updatedAt);
        expect(await storedText(t.config, body.uploads[0].path)).toBe("meow");
        const conflict = await invoke(
          { request: { requestId, input: { note: "hi" } }, files: { picture: png("woof", "../../cat.png") } },
          alice,
        );
        expect(conflict.status).toBe(409);
        expect(spooled()).toEqual([]);
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
        expect(spooled()).toEqual([]);
      });

      test("a file over MAX_FILE_BYTES or a request part over 8 MiB is 413; nothing is kept", async () => {
        const requestId = crypto.randomUUID();
        const tooBig = await invokeStreamed([
          requestPart(requestId),
          picturePart,
          { name: "extra", filename: "big.bin", body: filledStream(7) },
        ]);
        expect(tooBig.status).toBe(413);
        expect((await tooBig.json()).error).toBe("payload_too_large");
        expect((await t.fetch(`/executions/requests/${requestId}`, { token: alice })).status).toBe(404);

        const longRequest = await invokeStreamed([requestPart(crypto.randomUUID(), "n".repeat(8 * MiB)), picturePart]);
        expect(longRequest.status).toBe(413);
        expect((await longRequest.json()).error).toBe("payload_too_large");
        expect(spooled()).toEqual([]);
      });

      test("a file just under MAX_FILE_BYTES is taken whole, part order does not matter", async () => {
        const res: TestResponse = await invokeStreamed([
          picturePart,
          { name: "extra", filename: "big.bin", body: filledStream(6) },
          requestPart(crypto.randomUUID()),
        ]);
        expect(res.status).toBe(200);
        const body = await res.json();
        expect(body.execution.output).toMatchObject({ text: "png", hasExtra: true });
        expect(body.uploads).toContainEqual(expect.objectContaining({ field: "extra", size: 6 * MiB }));
        expect(spooled()).toEqual([]);
      });

      test("a part the contract does not name is 400 at once, naming it; nothing is kept, nothing runs", async () => {
        const filesBefore = await t.store.files.list({ prefix: "", limit: 1_000 });
        const cases: [action: string, part: PartSpec, expected: string][] = [
          // The action takes no files at all: a file part, or a field beside the request part.
          ["test.echo", { name: "attachment", filename: "a.bin", body: filledStream(5) }, '"request"'],
          ["test.echo", { name: "text", body: "n".repeat(5 * MiB) }, '"request"'],
          // An input property is no part: it goes in the request part's input.
          ["test.attach", { name: "note", body: "x" }, '"request", "picture", "extra"'],
        ];
        for (const [action, part, expected] of cases) {
          const requestId = crypto.randomUUID();
          const input = action === "test.echo" ? { text: "x" } : { note: "x" };
          const request = { name: "request", body: JSON.stringify({ requestId, input }) };
          const files = action === "test.attach" ? [picturePart] : [];
          const res = await invokeStreamed([request, ...files, part], undefined, action);
          expect(res.status, part.name).toBe(400);
          const body = await res.json();
          expect(body).toMatchObject({ ok: false, error: "invalid_request", requestId: null, executionId: null });
          expect(body.details.issues).toEqual([
            {
              where: `/${part.name}`,
              code: "unknown_part",
              message: `${action} takes no part named "${part.name}"; its parts are ${expected}`,
            },
          ]);
          expect((await t.fetch(`/executions/requests/${requestId}`, { token: alice })).status).toBe(404);
        }
        expect(await t.store.files.list({ prefix: "", limit: 1_000 })).toEqual(filesBefore);
        expect(spooled()).toEqual([]);
      });

      test("a part sent twice is 400 repeated_part, the request part as a file part", async () => {
        const requestId = crypto.randomUUID();
        for (const parts of [
          [requestPart(requestId), requestPart(requestId), picturePart],
          [requestPart(requestId), picturePart, picturePart],
        ]) {
          const res = await invokeStreamed(parts);
          expect(res.status).toBe(400);
          const name = parts[1] === picturePart ? "picture" : "request";
          expect((await res.json()).details.issues).toEqual([
            { where: `/${name}`, code: "repeated_part", message: `the part "${name}" is sent twice` },
          ]);
        }
        expect((await t.fetch(`/executions/requests/${requestId}`, { token: alice })).status).toBe(404);
        expect(spooled()).toEqual([]);
      });

      test("a body over MAX_MULTIPART_BYTES is 413 though each file is within its limit; nothing is kept", async () => {
        const requestId = crypto.randomUUID();
        const res = await invokeStreamed([
          requestPart(requestId),
          { name: "picture", filename: "p.png", contentType: "image/png", body: filledStream(4) },
          { name: "extra", filename: "big.bin", body: filledStream(6) },
        ]);
        expect(res.status).toBe(413);
        expect(await res.json()).toMatchObject({
          ok: false,
          error: "payload_too_large",
          details: { limitBytes: 10 * MiB },
        });
        expect((await t.fetch(`/executions/requests/${requestId}`, { token: alice })).status).toBe(404);
        expect(spooled()).toEqual([]);
      });

      test("the engine refuses a file its action does not name, whoever sends it (a release activated since HTTP read the parts)", async () => {
        const requestId = crypto.randomUUID();
        const sent = new Map([
          [
            "stray",
            {
              filename: "s.txt",
              contentType: "text/plain",
              size: 1,
              sha256: new Bun.CryptoHasher("sha256").update("s").digest("hex"),
              stream: () => new Blob(["s"]).stream(),
            },
          ],
        ]);
        const invoked = t.server.engine.invoke({
          principal: { kind: "user", id: "alice" },
          action: "test.echo",
          requestId,
          input: { text: "x" },
          files: sent,
        });
        await expect(invoked).rejects.toMatchObject({
          code: "action_contract_validation_failed",
          fields: { details: { issues: [expect.objectContaining({ where: "/input/stray", code: "unknown_file" })] } },
        });
        expect((await t.fetch(`/executions/requests/${requestId}`, { token: alice })).status).toBe(404);
      });

      if (storage.name === "s3") {
        test("an upload replaced through a presigned URL is learned when the execution is next shown", async () => {
          const res = await invoke(
            { request: { requestId: crypto.randomUUID(), input: { note: "x" } }, files: { picture: png("meow") } },
            alice,
          );
          const { execution, uploads } = await res.json();
          const signed = await (
            await t.fetch("/storage/signed-upload-url", {
              method: "POST",
              body: JSON.stringify({ path: uploads[0].path, contentType: "image/png" }),
              token: alice,
            })
          ).json();
          expect((await fetch(signed.url, { method: "PUT", headers: signed.headers, body: "purr purr" })).status).toBe(
            200,
          );
          const shown = await (await t.fetch(`/executions/${execution.id}`, { token: alice })).json();
          expect(shown.uploads).toEqual([{ ...uploads[0], size: 9 }]);
          expect((await t.store.files.get(uploads[0].path))?.sha256).toBe(
            new Bun.CryptoHasher("sha256").update("purr purr").digest("hex"),
          );
        });
      }

      test("an invocation the engine refuses leaves no spool file either", async () => {
        const multipart = multipartStream([requestPart(crypto.randomUUID()), picturePart]);
        const res = await t.fetch("/actions/test.nope/invoke", {
          method: "POST",
          headers: { "content-type": multipart.contentType },
          body: multipart.body,
          token: alice,
        });
        expect(res.status).toBe(404);
        expect(await res.json()).toMatchObject({ ok: false, error: "action_not_found" });
        expect(spooled()).toEqual([]);
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
          (
            await (
              await t.fetch("/actions/test.attach/invoke", { method: "POST", body: noRequest, token: alice })
            ).json()
          ).error,
        ).toBe("invalid_request");

        const truncated = multipartStream([requestPart(crypto.randomUUID()), picturePart]);
        const bytes = new Uint8Array(await new Response(truncated.body).arrayBuffer());
        const broken: [Uint8Array | string, string][] = [
          [bytes.subarray(0, bytes.length - 20), truncated.contentType], // no closing boundary
          [bytes, "multipart/form-data"], // no boundary parameter
          ["not multipart at all", truncated.contentType],
          ["", truncated.contentType],
        ];
        for (const [body, contentType] of broken) {
          const res = await t.fetch("/actions/test.attach/invoke", {
            method: "POST",
            headers: { "content-type": contentType },
            body,
            token: alice,
          });
          expect(res.status).toBe(400);
          expect(await res.json()).toMatchObject({ ok: false, error: "invalid_request" });
        }
        expect(spooled()).toEqual([]);
      });
    });
  }
}

for (const dialect of dialects) {
  for (const storage of storages) {
    describe(`uploads and retention on ${storage.name} (${dialect.name})`, () => {
      let t: TestServer;
      beforeAll(async () => {
        t = await startTestServer(dialect, {
          release: fixture("basic"),
          env: { ...(await storage.env()), EXECUTION_RETENTION: "1s" },
        });
      });
      afterAll(async () => {
        await t.stop();
        await storage.release();
      });

      test("an upload belongs to its execution: forgotten with it, its bytes go too; the caller's own files stay", async () => {
        const form = new FormData();
        form.set("request", JSON.stringify({ requestId: crypto.randomUUID(), input: { note: "x" } }));
        form.set("picture", new File(["meow"], "cat.png", { type: "image/png" }));
        form.set("extra", new File(["more"], "more.txt", { type: "text/plain" }));
        const own = await t.fetch("/storage/upload", {
          method: "PUT",
          headers: { path: "mine/keep.txt", "content-type": "text/plain" },
          body: "kept",
        });
        expect(own.status).toBe(200);
        const { execution, uploads } = await (
          await t.fetch("/actions/test.attach/invoke", { method: "POST", body: form })
        ).json();
        expect(execution.status).toBe("succeeded");
        const paths: string[] = uploads.map((upload: { path: string }) => upload.path);
        expect(await Promise.all(paths.map((path) => storedText(t.config, path)))).toEqual(["more", "meow"]);

        await eventually(async () => (await t.fetch(`/executions/${execution.id}`)).status === 404, 15_000);
        expect(await Promise.all(paths.map((path) => storedText(t.config, path)))).toEqual([null, null]);
        expect(await Promise.all(paths.map((path) => t.store.files.get(path)))).toEqual([null, null]);
        if (storage.name === "disk") {
          // Nor the folders the uploads were in.
          expect(existsSync(join(t.config.dataDir, "files", "executions", execution.id))).toBe(false);
        }
        expect(await storedText(t.config, "mine/keep.txt")).toBe("kept");
      }, 30_000);
    });
  }
}

describe("streaming multipart invocation", () => {
  test("a 200 MiB file part streams through a server process without holding the file in memory", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-big-invoke-"));
    const env = { DATA_DIR: dataDir, DATABASE_URL: "", SERVICE_KEYS: "big-key", MAX_FILE_BYTES: String(300 * MiB) };
    const server = await serve(["start", "--release", fixture("basic")], env);
    try {
      const multipart = multipartStream([
        { name: "request", body: JSON.stringify({ requestId: crypto.randomUUID(), input: { note: "big" } }) },
        { name: "picture", filename: "p.png", contentType: "image/png", body: "png" },
        { name: "extra", filename: "big.bin", contentType: "application/octet-stream", body: filledStream(200) },
      ]);
      const rss = watchRss(server.proc.pid);
      const res: TestResponse = await fetch(`${server.url}/actions/test.attach/invoke`, {
        method: "POST",
        headers: { authorization: "Bearer big-key", "content-type": multipart.contentType },
        body: multipart.body,
      });
      const growth = rss.stop();
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body.execution.status).toBe("succeeded");
      expect(body.uploads).toContainEqual(expect.objectContaining({ field: "extra", size: 200 * MiB }));
      // Spooled, then stored: the file held in memory would add 200 MiB (formData() did); streaming adds buffers and GC slack.
      expect(growth).toBeLessThan(120 * MiB);
    } finally {
      await server.kill();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  test("fields the contract does not name are refused at the first: 40 fields of 8 MiB are not held in memory", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-fields-invoke-"));
    const env = { DATA_DIR: dataDir, DATABASE_URL: "", SERVICE_KEYS: "fields-key" };
    const server = await serve(["start", "--release", fixture("basic")], env);
    try {
      const fields: PartSpec[] = Array.from({ length: 40 }, (_, i) => ({ name: `f${i}`, body: filledStream(8, 65) }));
      const multipart = multipartStream([
        { name: "request", body: JSON.stringify({ requestId: crypto.randomUUID(), input: { text: "x" } }) },
        ...fields,
      ]);
      const rss = watchRss(server.proc.pid);
      const res: TestResponse = await fetch(`${server.url}/actions/test.echo/invoke`, {
        method: "POST",
        headers: { authorization: "Bearer fields-key", "content-type": multipart.contentType },
        body: multipart.body,
      });
      const growth = rss.stop();
      // Kept as text, the fields add their 320 MiB and more (446 MiB seen; 1,143 MiB for 99 of them): refused, ~3 MiB.
      expect(growth).toBeLessThan(64 * MiB);
      expect(res.status).toBe(400);
      expect((await res.json()).details.issues).toEqual([
        expect.objectContaining({ where: "/f0", code: "unknown_part" }),
      ]);
    } finally {
      await server.kill();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  test("spool files left by a killed server are gone once the next server on its DATA_DIR starts", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-killed-spool-"));
    const env = { DATA_DIR: dataDir, DATABASE_URL: "", SERVICE_KEYS: "kill-key" };
    let server = await serve(["start", "--release", fixture("basic")], env);
    try {
      // An upload that stalls mid-file: its part is being spooled when the server dies.
      let sent = 0;
      const stalled = new ReadableStream<Uint8Array>({
        pull: (controller) => (sent++ < 2 ? controller.enqueue(new Uint8Array(MiB)) : new Promise(() => {})),
      });
      const multipart = multipartStream([
        { name: "request", body: JSON.stringify({ requestId: crypto.randomUUID(), input: { note: "x" } }) },
        { name: "extra", filename: "big.bin", body: stalled },
      ]);
      const upload = fetch(`${server.url}/actions/test.attach/invoke`, {
        method: "POST",
        headers: { authorization: "Bearer kill-key", "content-type": multipart.contentType },
        body: multipart.body,
      }).catch(() => null);
      await eventually(() => spooledIn(dataDir).length > 0);
      server.proc.kill("SIGKILL");
      await server.proc.exited;
      await upload;
      expect(spooledIn(dataDir)).not.toEqual([]);

      server = await serve(["start", "--release", fixture("basic")], env);
      expect(spooledIn(dataDir)).toEqual([]);
    } finally {
      await server.kill();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
