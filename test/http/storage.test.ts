import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "../../src/main.ts";
import { openStore } from "../../src/store/open.ts";
import { serve } from "../support/cli.ts";
import { dialects } from "../support/databases.ts";
import { eventually, startTestServer, type TestResponse, type TestServer } from "../support/server.ts";
import { presignedSignatureValid } from "../support/sigv4.ts";
import { S3_KEY, storages, storedText } from "../support/storages.ts";
import { filledStream, MiB, watchRss } from "../support/streams.ts";

const sha256 = (bytes: string | Uint8Array) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");

for (const dialect of dialects) {
  for (const storage of storages) {
    describe(`storage on ${storage.name} (${dialect.name})`, () => {
      let t: TestServer;
      let alice: string;
      let bob: string;
      const upload = (path: string, body: RequestInit["body"], token?: string | null, contentType = "text/plain") =>
        t.fetch("/storage/upload", { method: "PUT", headers: { path, "content-type": contentType }, body, token });
      const signDownload = (path: string, token?: string | null) =>
        t.fetch(`/storage/signed-download-url?filename=${encodeURIComponent(path)}`, { token });
      /** Where presigned URLs point: the S3 endpoint (empty on disk). */
      const storeUrl = () => (t.config.storage.driver === "s3" ? t.config.storage.endPoint : "");
      const signUpload = (body: unknown, token?: string | null) =>
        t.fetch("/storage/signed-upload-url", { method: "POST", body: JSON.stringify(body), token });

      const lines: ({ msg: string } & Record<string, unknown>)[] = [];

      beforeAll(async () => {
        const env = await storage.env();
        t = await startTestServer(dialect, {
          env: { ...env, MAX_FILE_BYTES: String(MiB) },
          log: (msg: string, fields?: Record<string, unknown>) => lines.push({ msg, ...fields }),
        });
        alice = await t.userToken("alice");
        bob = await t.userToken("bob");
      });
      afterAll(async () => {
        await t.stop();
        await storage.release();
      });

      test("upload answers the metadata; a signed download URL serves the bytes without a credential", async () => {
        const res = await upload("docs/hello.txt", "hello world", alice);
        expect(res.status).toBe(200);
        expect(await res.json()).toMatchObject({
          path: "docs/hello.txt",
          contentType: "text/plain",
          size: 11,
          sha256: sha256("hello world"),
          owner: { kind: "user", id: "alice" },
        });
        expect(await storedText(t.config, "docs/hello.txt")).toBe("hello world");
        const signed = await (await signDownload("docs/hello.txt", alice)).json();
        expect(new Date(signed.expiresAt).getTime()).toBeGreaterThan(Date.now() + 59 * 60_000);
        // Disk: the server's own signed URL; S3: a presigned URL of the store.
        expect(signed.url.startsWith(storage.name === "disk" ? `${t.url}/storage/signed/` : storeUrl())).toBe(true);
        const download = await fetch(signed.url);
        expect(download.status).toBe(200);
        expect(download.headers.get("content-type")).toBe("text/plain");
        expect(await download.text()).toBe("hello world");
      });

      test("the same path again replaces the file for its owner; another user gets 404, never 403", async () => {
        await upload("mine.txt", "v1", alice);
        expect((await upload("mine.txt", "version two", alice)).status).toBe(200);
        expect(await (await fetch((await (await signDownload("mine.txt", alice)).json()).url)).text()).toBe(
          "version two",
        );
        for (const res of [
          await upload("mine.txt", "bob was here", bob),
          await signDownload("mine.txt", bob),
          await signUpload({ path: "mine.txt", contentType: "text/plain" }, bob),
          await t.fetch("/storage/files?filename=mine.txt", { method: "DELETE", token: bob }),
        ]) {
          expect(res.status).toBe(404);
          expect(await res.json()).toMatchObject({ ok: false, error: "file_not_found" });
        }
        expect(await storedText(t.config, "mine.txt")).toBe("version two");
        expect((await signDownload("mine.txt")).status).toBe(200); // a service key reaches every file
      });

      test("delete removes the file and its metadata", async () => {
        await upload("gone.txt", "bye", alice);
        const url = (await (await signDownload("gone.txt", alice)).json()).url;
        const res = await t.fetch("/storage/files?filename=gone.txt", { method: "DELETE", token: alice });
        expect(await res.json()).toEqual({ ok: true });
        expect((await fetch(url)).status).toBe(404);
        expect((await signDownload("gone.txt", alice)).status).toBe(404);
        expect(await storedText(t.config, "gone.txt")).toBeNull();
        expect(await t.store.files.get("gone.txt")).toBeNull();
      });

      test("a signed upload URL takes a browser's PUT without a credential; the file is then the signer's", async () => {
        const res = await signUpload({ path: "img/a.png", contentType: "image/png", expiresIn: 60 }, alice);
        expect(res.status).toBe(200);
        const signed = await res.json();
        expect(signed).toMatchObject({ method: "PUT", headers: { "content-type": "image/png" } });
        expect(new Date(signed.expiresAt).getTime()).toBeLessThanOrEqual(Date.now() + 60_000);
        const bytes = new Uint8Array([137, 80, 78, 71]);
        const put = await fetch(signed.url, { method: "PUT", headers: signed.headers, body: bytes });
        expect(put.status).toBe(200);
        if (storage.name === "disk") {
          expect(await put.json()).toMatchObject({ path: "img/a.png", size: 4, owner: { id: "alice" } });
        } else {
          // The store took the bytes; the server learns size and checksum when next asked for the file.
          expect(signed.url.startsWith(storeUrl())).toBe(true);
          expect(await t.store.files.get("img/a.png")).toMatchObject({ size: null, sha256: null, ownerId: "alice" });
        }
        const download = await signDownload("img/a.png", alice);
        expect(download.status).toBe(200);
        expect(new Uint8Array(await (await fetch((await download.json()).url)).arrayBuffer())).toEqual(bytes);
        expect(await t.store.files.get("img/a.png")).toMatchObject({
          size: 4,
          sha256: sha256(bytes),
          ownerId: "alice",
        });
        expect((await signDownload("img/a.png", bob)).status).toBe(404);
      });

      test("a signed upload not used yet is no file to download", async () => {
        await signUpload({ path: "pending.txt", contentType: "text/plain" }, alice);
        const res = await signDownload("pending.txt", alice);
        expect(res.status).toBe(404);
        expect((await res.json()).error).toBe("file_not_found");
      });

      test("the filename query parameter is required and alone: 400 invalid_request naming it", async () => {
        for (const [path, param] of [
          ["/storage/signed-download-url", "filename"],
          ["/storage/signed-download-url?filename=a.txt&expires=1", "expires"],
          ["/storage/files", "filename"],
        ] as const) {
          const res = await t.fetch(path, {
            method: path.startsWith("/storage/files") ? "DELETE" : "GET",
            token: alice,
          });
          expect(res.status, path).toBe(400);
          expect((await res.json()).details.issues[0]).toMatchObject({ where: `/query/${param}` });
        }
      });

      test("paths that could escape the root are 400 invalid_path", async () => {
        const bad = [
          "../escape.txt",
          "a/../../b",
          "/etc/passwd",
          "a\\b",
          "a/\u0000b",
          "a//b",
          "./a",
          "",
          "x".repeat(1025),
        ];
        for (const path of bad) {
          const res = await signUpload({ path, contentType: "text/plain" }, alice);
          expect(res.status, JSON.stringify(path)).toBe(400);
          expect((await res.json()).error).toMatch(/invalid_path|invalid_request/);
        }
        const encoded = await signDownload("%2e%2e/x", alice);
        expect(encoded.status).toBe(404); // a literal "%2e%2e" segment is a name, not "..": it simply does not exist
        const viaHeader = await upload("../../outside.txt", "x", alice);
        expect(viaHeader.status).toBe(400);
        if (storage.name === "disk") {
          expect(readdirSync(join(t.config.dataDir, "files", ".."))).not.toContain("outside.txt");
        }
      });

      test("a body over MAX_FILE_BYTES is 413 and leaves nothing behind, declared or streamed", async () => {
        for (const body of [new Uint8Array(MiB + 1), filledStream(2)]) {
          const res = await upload("big.bin", body, alice, "application/octet-stream");
          expect(res.status).toBe(413);
          expect((await res.json()).error).toBe("payload_too_large");
          expect((await signDownload("big.bin", alice)).status).toBe(404);
          expect(await storedText(t.config, "big.bin")).toBeNull();
        }
        if (storage.name === "disk") {
          expect(readdirSync(join(t.config.dataDir, "files")).filter((f) => f.startsWith("big.bin"))).toEqual([]);
        }
      });

      test("an upload whose client leaves mid-body is a client abort: one warning, a 400, no 500, nothing stored", async () => {
        const { port } = new URL(t.url);
        const refusedUploads = async () => {
          const metrics = await (await t.fetch("/metrics", { token: t.serviceKey })).text();
          expect(metrics).not.toContain('status="500"');
          return Number(
            /actuate_http_requests_total\{route="\/storage\/upload",status="400"\} (\d+)/.exec(metrics)?.[1] ?? 0,
          );
        };
        const refusedBefore = await refusedUploads();
        const signed = await (await signUpload({ path: "left/signed.txt", contentType: "text/plain" }, alice)).json();
        type Put = [target: string, path: string, framing: string];
        const puts: Put[] = [
          ["/storage/upload", "left/declared.txt", "content-length: 100000"],
          ["/storage/upload", "left/chunked.txt", "transfer-encoding: chunked"],
        ];
        // The server's own signed URL (S3's go to the bucket).
        if (storage.name === "disk")
          puts.push([new URL(signed.url).pathname, "left/signed.txt", "content-length: 100000"]);
        for (const [target, path, framing] of puts) {
          const reqId = `left-${path.replace(/\W/g, "-")}`;
          const socket = await Bun.connect({ hostname: "127.0.0.1", port: Number(port), socket: { data() {} } });
          const body = framing.startsWith("transfer-encoding") ? "5\r\nhello\r\n" : "hello";
          socket.write(
            `PUT ${target} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${alice}\r\npath: ${path}\r\n` +
              `content-type: text/plain\r\nx-request-id: ${reqId}\r\n${framing}\r\n\r\n${body}`,
          );
          socket.end();
          const access = await eventually(() => lines.find((l) => l.reqId === reqId && l.route !== undefined));
          expect(access).toMatchObject({ status: 400, level: "info" });
          const warnings = lines.filter((l) => l.reqId === reqId && l.level === "warn");
          expect(warnings.map((l) => l.msg)).toEqual([`PUT ${target}: the body broke off before its end (400)`]);
          expect(await storedText(t.config, path)).toBeNull();
        }
        expect(lines.filter((l) => l.level === "error")).toEqual([]);
        expect(await refusedUploads()).toBe(refusedBefore + 2);
      });

      test("every storage endpoint but the signed URLs needs a credential", async () => {
        expect((await upload("x.txt", "x", null)).status).toBe(401);
        expect((await t.fetch("/storage/signed-upload-url", { method: "POST", body: "{}", token: null })).status).toBe(
          401,
        );
        expect((await signDownload("x.txt", null)).status).toBe(401);
        expect((await t.fetch("/storage/files?filename=x.txt", { method: "DELETE", token: null })).status).toBe(401);
      });

      if (storage.name === "disk") {
        test("our signed URLs: tampered, expired, other-method or other-type are 403 JSON", async () => {
          await upload("secret.txt", "s", alice);
          const { url } = await (await signDownload("secret.txt", alice)).json();
          const token = url.split("/storage/signed/")[1] as string;
          const [payload, mac] = token.split(".") as [string, string];
          const forged = JSON.parse(Buffer.from(payload, "base64url").toString());
          forged.p = "mine.txt";
          const tampered = `${Buffer.from(JSON.stringify(forged)).toString("base64url")}.${mac}`;
          for (const bad of [`${t.url}/storage/signed/${tampered}`, `${t.url}/storage/signed/garbage`, `${url}x`]) {
            const res = await fetch(bad);
            expect(res.status).toBe(403);
            expect(await res.json()).toMatchObject({ ok: false, error: "signed_url_invalid" });
          }
          expect((await fetch(url, { method: "PUT", body: "overwrite" })).status).toBe(403);
          const signed = await (await signUpload({ path: "typed.png", contentType: "image/png" }, alice)).json();
          const wrongType: TestResponse = await fetch(signed.url, {
            method: "PUT",
            headers: { "content-type": "text/plain" },
            body: "x",
          });
          expect(wrongType.status).toBe(403);
          expect((await wrongType.json()).error).toBe("signed_url_invalid");
          const late = (
            await (await signUpload({ path: "late.txt", contentType: "text/plain", expiresIn: 1 }, alice)).json()
          ).url;
          await Bun.sleep(1_100); // the only way to let a 1 s grant lapse
          const res: TestResponse = await fetch(late, {
            method: "PUT",
            headers: { "content-type": "text/plain" },
            body: "x",
          });
          expect(res.status).toBe(403);
          expect((await res.json()).error).toBe("signed_url_expired");
        });
      }

      if (storage.name === "disk") {
        test("a path through a stored file, or onto a folder of them, is 400 invalid_path on disk, never 500", async () => {
          expect((await upload("clash/a.txt", "a", alice)).status).toBe(200);
          expect((await upload("clash/dir/b.txt", "b", alice)).status).toBe(200);
          for (const path of ["clash/a.txt/inside.txt", "clash/dir"]) {
            const res = await upload(path, "x", alice);
            expect(res.status, path).toBe(400);
            expect(await res.json()).toMatchObject({ ok: false, error: "invalid_path" });
            expect(await t.store.files.get(path)).toBeNull();
          }
          expect(await storedText(t.config, "clash/a.txt")).toBe("a");
          expect(await storedText(t.config, "clash/dir/b.txt")).toBe("b");
        });

        test("our signed URLs with any text after the grant are refused, download and upload alike", async () => {
          await upload("suffixed.txt", "s", alice);
          const { url } = await (await signDownload("suffixed.txt", alice)).json();
          const signed = await (await signUpload({ path: "suffixed-up.txt", contentType: "text/plain" }, alice)).json();
          // A further segment is another path, which nothing serves.
          for (const method of ["GET", "PUT"]) {
            const res: TestResponse = await fetch(`${url}/x`, {
              method,
              headers: signed.headers,
              body: method === "PUT" ? "x" : undefined,
            });
            expect(res.status).toBe(404);
            expect((await res.json()).ok).toBe(false);
          }
          for (const suffix of [".png", ".", "..", ".x.y", "%2Ejpg", "/"]) {
            const download: TestResponse = await fetch(`${url}${suffix}`);
            expect(download.status, suffix).toBe(403);
            expect(await download.json()).toMatchObject({ ok: false, error: "signed_url_invalid" });
            const put: TestResponse = await fetch(`${signed.url}${suffix}`, {
              method: "PUT",
              headers: signed.headers,
              body: "forged",
            });
            expect(put.status, suffix).toBe(403);
            expect(await put.json()).toMatchObject({ ok: false, error: "signed_url_invalid" });
          }
          expect(await storedText(t.config, "suffixed-up.txt")).toBeNull();
          // As issued, both still work.
          expect(await (await fetch(url)).text()).toBe("s");
          expect((await fetch(signed.url, { method: "PUT", headers: signed.headers, body: "up" })).status).toBe(200);
        });
      }

      if (storage.name === "disk") {
        test("a signed upload URL takes one upload, on whichever instance; one that stored nothing may be used again", async () => {
          // A second instance on the same database and DATA_DIR (files, signing secret), with its own store.
          const peerStore = await openStore(t.config.databaseUrl);
          const peer = await startServer(t.config, { store: peerStore, log: () => {} });
          const on = (base: string, url: string) => `${base}${new URL(url).pathname}`;
          const put = (
            url: string,
            body: RequestInit["body"],
            headers: Record<string, string>,
          ): Promise<TestResponse> => fetch(url, { method: "PUT", headers, body });
          try {
            const once = await (await signUpload({ path: "once/a.txt", contentType: "text/plain" }, alice)).json();
            expect((await put(on(peer.url, once.url), "first", once.headers)).status).toBe(200);
            for (const base of [t.url, peer.url]) {
              const again = await put(on(base, once.url), "second", once.headers);
              expect(again.status).toBe(403);
              expect(await again.json()).toMatchObject({ ok: false, error: "signed_url_used" });
            }
            expect(await storedText(t.config, "once/a.txt")).toBe("first");

            // Two PUTs at once, one to each instance: one takes the upload.
            const raced = await (await signUpload({ path: "once/b.txt", contentType: "text/plain" }, alice)).json();
            const statuses = await Promise.all(
              [t.url, peer.url].map(async (base) => (await put(on(base, raced.url), base, raced.headers)).status),
            );
            expect(statuses.sort()).toEqual([200, 403]);

            // Refused (too large) or broken off, an upload stores nothing and leaves the URL usable.
            const retried = await (await signUpload({ path: "once/c.txt", contentType: "text/plain" }, alice)).json();
            expect((await put(retried.url, new Uint8Array(MiB + 1), retried.headers)).status).toBe(413);
            expect((await put(on(peer.url, retried.url), "at last", retried.headers)).status).toBe(200);
            expect((await put(retried.url, "once more", retried.headers)).status).toBe(403);
            expect(await storedText(t.config, "once/c.txt")).toBe("at last");

            // A signed download stays usable until it expires: a download changes nothing.
            const { url } = await (await signDownload("once/c.txt", alice)).json();
            for (const base of [t.url, peer.url, t.url])
              expect(await (await fetch(on(base, url))).text()).toBe("at last");
          } finally {
            await peer.stop();
            await peerStore.close();
          }
        }, 30_000);
      }

      if (storage.name === "s3") {
        test("presigned URLs are signed for their path and method; an expired one is refused by the store", async () => {
          const { url } = await (await signUpload({ path: "signed/one.txt", contentType: "text/plain" }, alice)).json();
          // s3rver does not check V4 signatures at all (it takes any), so the signature is checked here
          // the way S3 and MinIO check it: valid as issued, invalid for another path, method or expiry.
          expect(presignedSignatureValid(url, "PUT", S3_KEY)).toBe(true);
          expect(presignedSignatureValid(url.replace("signed/one", "signed/two"), "PUT", S3_KEY)).toBe(false);
          expect(presignedSignatureValid(url, "GET", S3_KEY)).toBe(false);
          expect(presignedSignatureValid(url.replace("X-Amz-Expires=3600", "X-Amz-Expires=7200"), "PUT", S3_KEY)).toBe(
            false,
          );
          // s3rver does enforce X-Amz-Date + X-Amz-Expires.
          const late = (
            await (await signUpload({ path: "late.txt", contentType: "text/plain", expiresIn: 1 }, alice)).json()
          ).url;
          await Bun.sleep(2_100); // X-Amz-Date has whole seconds: wait past any rounding of a 1 s grant
          const res = await fetch(late, { method: "PUT", headers: { "content-type": "text/plain" }, body: "x" });
          expect(res.status).toBe(403);
          expect(await res.text()).toContain("Request has expired");
          expect(await storedText(t.config, "late.txt")).toBeNull();
        });

        test("a file PUT to the store larger than MAX_FILE_BYTES is deleted when the server learns of it", async () => {
          const { url } = await (
            await signUpload({ path: "huge.bin", contentType: "application/octet-stream" }, alice)
          ).json();
          expect((await fetch(url, { method: "PUT", body: new Uint8Array(MiB + 1) })).status).toBe(200);
          const res = await signDownload("huge.bin", alice);
          expect(res.status).toBe(404);
          expect(await storedText(t.config, "huge.bin")).toBeNull();
        });
      }
    });
  }
}

describe("streaming", () => {
  test("a 200 MiB upload streams through a server process without holding the file in memory", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-big-"));
    const env = { DATA_DIR: dataDir, DATABASE_URL: "", SERVICE_KEYS: "big-key", MAX_FILE_BYTES: String(300 * MiB) };
    const server = await serve(["start"], env);
    try {
      const rss = watchRss(server.proc.pid);
      const res: TestResponse = await fetch(`${server.url}/storage/upload`, {
        method: "PUT",
        headers: { authorization: "Bearer big-key", path: "big/file.bin", "content-type": "application/octet-stream" },
        body: filledStream(200),
      });
      const growth = rss.stop();
      expect(res.status).toBe(200);
      expect((await res.json()).size).toBe(200 * MiB);
      expect(statSync(join(dataDir, "files", "big/file.bin")).size).toBe(200 * MiB);
      // The whole file held in memory would add 200 MiB; streaming keeps the growth to buffers and GC slack (~60 MiB seen).
      expect(growth).toBeLessThan(120 * MiB);
    } finally {
      await server.kill();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
