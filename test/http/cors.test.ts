import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { dialects } from "../support/databases.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";
import { S3_CORS_BUCKET, S3_CORS_ORIGIN, s3 } from "../support/storages.ts";

const LISTED = "https://app.example.com";
const ALSO_LISTED = "https://admin.example.com";
const UNLISTED = "https://evil.example";
const MISSING = "0190c5a4-0000-7000-8000-000000000000";

/** What a browser sends before a request it may not send unasked. */
const preflight = (url: string, origin: string, method: string, headers = "authorization, content-type") =>
  fetch(url, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": headers },
  });

/** An MCP ping from a page on `origin` (a service key unless `token` says otherwise). */
const pingMcp = (t: TestServer, origin: string, token?: string) =>
  t.fetch("/mcp", {
    method: "POST",
    headers: { origin, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    token,
  });

const corsHeaders = (res: Response) => [...res.headers.keys()].filter((name) => name.startsWith("access-control-"));

for (const dialect of dialects) {
  describe(`CORS for listed origins (${dialect.name})`, () => {
    let t: TestServer;
    let alice: string;

    beforeAll(async () => {
      t = await startTestServer(dialect, {
        release: fixture("basic"),
        env: { CORS_ORIGINS: `${LISTED}, ${ALSO_LISTED}/` },
      });
      alice = await t.userToken("alice");
    });
    afterAll(() => t.stop());

    test("a preflight on every API route answers 204 granting the listed origin", async () => {
      const routes: [string, string][] = [
        ["/actions/test.echo/invoke", "POST"],
        ["/actions/test.echo/contract", "GET"],
        ["/executions", "GET"],
        [`/executions/${MISSING}/result`, "GET"],
        ["/runs", "GET"],
        [`/runs/${MISSING}/cancel`, "POST"],
        ["/query?format=objects", "POST"],
        ["/storage/upload", "PUT"],
        ["/storage/signed-upload-url", "POST"],
        ["/storage/signed-download-url?filename=a.txt", "GET"],
        ["/storage/files?filename=a.txt", "DELETE"],
        ["/session", "GET"],
        ["/mcp", "POST"],
      ];
      for (const [path, method] of routes) {
        for (const origin of [LISTED, ALSO_LISTED]) {
          const res = await preflight(`${t.url}${path}`, origin, method);
          expect(res.status).toBe(204);
          expect(res.headers.get("access-control-allow-origin")).toBe(origin);
          expect(res.headers.get("vary")).toBe("Origin");
          expect(res.headers.get("access-control-allow-methods")?.split(", ")).toContain(method);
          expect(res.headers.get("access-control-allow-headers")?.split(", ")).toEqual(
            expect.arrayContaining([
              "authorization",
              "content-type",
              "path",
              "mcp-protocol-version",
              "mcp-method",
              "mcp-name",
            ]),
          );
          expect(Number(res.headers.get("access-control-max-age"))).toBeGreaterThan(0);
          expect(await res.text()).toBe("");
        }
      }
    });

    test("responses to a listed origin carry the grant, error responses included", async () => {
      const headers = { origin: LISTED, "content-type": "application/json" };
      const invoke = JSON.stringify({ requestId: crypto.randomUUID(), input: { text: "hi" } });
      const answers = [
        [200, await t.fetch("/actions/test.echo/invoke", { method: "POST", headers, body: invoke, token: alice })],
        [200, await t.fetch("/executions", { headers, token: alice })],
        [401, await t.fetch("/executions", { headers, token: null })],
        [404, await t.fetch(`/executions/${MISSING}`, { headers, token: alice })],
        [400, await t.fetch("/actions/test.echo/invoke", { method: "POST", headers, body: "{nope", token: alice })],
        [404, await t.fetch("/no/such/route", { headers, token: alice })],
      ] as const;
      for (const [status, res] of answers) {
        expect(res.status).toBe(status);
        expect(res.headers.get("access-control-allow-origin")).toBe(LISTED);
        expect(res.headers.get("vary")).toBe("Origin");
        expect(res.headers.get("access-control-expose-headers")?.split(", ")).toEqual(
          expect.arrayContaining(["www-authenticate", "allow", "mcp-session-id"]),
        );
        if (status !== 200) expect(await res.json()).toMatchObject({ ok: false, error: expect.any(String) });
      }
      expect(answers[2][1].headers.get("www-authenticate")).toStartWith("Bearer resource_metadata=");
    });

    test("an unlisted origin, or none (same-origin, not a browser), gets no CORS header at all", async () => {
      expect(corsHeaders(await t.fetch("/executions", { token: alice }))).toEqual([]);
      const asked = await preflight(`${t.url}/actions/test.echo/invoke`, UNLISTED, "POST");
      expect(asked.status).toBe(204);
      expect(corsHeaders(asked)).toEqual([]);
      for (const token of [alice, null]) {
        const res = await t.fetch("/executions", { headers: { origin: UNLISTED }, token });
        expect(corsHeaders(res)).toEqual([]);
        expect(res.headers.get("vary")).toBeNull();
      }
    });

    test("a WebSocket from a listed origin still opens /session", async () => {
      const socket = new WebSocket(`${t.url.replace(/^http/, "ws")}/session`, { headers: { origin: LISTED } });
      await new Promise((resolve, reject) => {
        socket.onopen = resolve;
        socket.onerror = reject;
      });
      socket.close();
    });

    test("signed disk URLs answer any origin: preflight, PUT, GET and their refusals", async () => {
      const signed = await (
        await t.fetch("/storage/signed-upload-url", {
          method: "POST",
          body: JSON.stringify({ path: "browser/up.txt", contentType: "text/plain" }),
          token: alice,
        })
      ).json();
      expect(signed.url).toStartWith(`${t.url}/storage/signed/`);
      const asked = await preflight(signed.url, UNLISTED, "PUT", "content-type");
      expect(asked.status).toBe(204);
      expect(asked.headers.get("access-control-allow-origin")).toBe("*");
      expect(asked.headers.get("access-control-allow-methods")?.split(", ")).toEqual(["GET", "PUT"]);
      expect(asked.headers.get("access-control-allow-headers")?.split(", ")).toContain("content-type");

      const put = await fetch(signed.url, {
        method: "PUT",
        headers: { origin: UNLISTED, "content-type": "text/plain" },
        body: "from a page",
      });
      expect(put.status).toBe(200);
      expect(put.headers.get("access-control-allow-origin")).toBe("*");

      const { url } = await (
        await t.fetch("/storage/signed-download-url?filename=browser/up.txt", { token: alice })
      ).json();
      const get = await fetch(url, { headers: { origin: UNLISTED } });
      expect(get.headers.get("access-control-allow-origin")).toBe("*");
      expect(get.headers.get("access-control-expose-headers")?.split(", ")).toContain("content-length");
      expect(await get.text()).toBe("from a page");

      const refused = await fetch(`${t.url}/storage/signed/garbage`, { headers: { origin: UNLISTED } });
      expect(refused.status).toBe(403);
      expect(refused.headers.get("access-control-allow-origin")).toBe("*");
      expect(await refused.json()).toMatchObject({ ok: false, error: "signed_url_invalid" });
    });

    test("the protected-resource metadata answers any origin with *", async () => {
      for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
        const asked = await preflight(`${t.url}${path}`, UNLISTED, "GET", "mcp-protocol-version");
        expect(asked.status).toBe(204);
        expect(asked.headers.get("access-control-allow-origin")).toBe("*");
        const res = await t.fetch(path, { headers: { origin: UNLISTED }, token: null });
        expect(res.status).toBe(200);
        expect(res.headers.get("access-control-allow-origin")).toBe("*");
        expect((await res.json()).resource).toBe(`${t.url}/mcp`);
      }
    });

    test("/mcp lets a listed origin through with the grant; an unlisted one is 403 with none", async () => {
      const listed = await pingMcp(t, LISTED, alice);
      expect(listed.status).toBe(200);
      expect(listed.headers.get("access-control-allow-origin")).toBe(LISTED);
      const unlisted = await pingMcp(t, UNLISTED, alice);
      expect(unlisted.status).toBe(403);
      expect(corsHeaders(unlisted)).toEqual([]);
    });
  });

  describe(`CORS_ORIGINS=* (${dialect.name})`, () => {
    let t: TestServer;

    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic"), env: { CORS_ORIGINS: "*" } });
    });
    afterAll(() => t.stop());

    test("any origin may call the API, answered with *", async () => {
      const asked = await preflight(`${t.url}/actions/test.echo/invoke`, UNLISTED, "POST");
      expect(asked.headers.get("access-control-allow-origin")).toBe("*");
      const refused = await t.fetch("/executions", { headers: { origin: UNLISTED }, token: null });
      expect(refused.status).toBe(401);
      expect(refused.headers.get("access-control-allow-origin")).toBe("*");
    });

    test("* never loosens /mcp: a foreign origin is 403 and granted nothing; same-origin still passes", async () => {
      const asked = await preflight(`${t.url}/mcp`, UNLISTED, "POST");
      expect(corsHeaders(asked)).toEqual([]);
      const foreign = await pingMcp(t, UNLISTED);
      expect(foreign.status).toBe(403);
      expect(corsHeaders(foreign)).toEqual([]);
      expect((await pingMcp(t, t.url)).status).toBe(200);
    });
  });

  describe(`ALLOWED_ORIGINS, the older name (${dialect.name})`, () => {
    let t: TestServer;

    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic"), env: { ALLOWED_ORIGINS: LISTED } });
    });
    afterAll(() => t.stop());

    test("grants its origins on the API and lets them call /mcp", async () => {
      const asked = await preflight(`${t.url}/executions`, LISTED, "GET");
      expect(asked.headers.get("access-control-allow-origin")).toBe(LISTED);
      const mcp = await pingMcp(t, LISTED);
      expect(mcp.status).toBe(200);
      expect(mcp.headers.get("access-control-allow-origin")).toBe(LISTED);
    });
  });

  describe(`CORS on the S3 bucket (${dialect.name})`, () => {
    let t: TestServer;
    let alice: string;
    const sign = async (path: string, body?: unknown) =>
      (await t.fetch(path, { method: body ? "POST" : "GET", body: JSON.stringify(body), token: alice })).json();

    beforeAll(async () => {
      const env = await s3.env();
      t = await startTestServer(dialect, { env: { ...env, S3_BUCKET: S3_CORS_BUCKET, CORS_ORIGINS: S3_CORS_ORIGIN } });
      alice = await t.userToken("alice");
    });
    afterAll(async () => {
      await t.stop();
      await s3.release();
    });

    test("a bucket with the documented rule takes a browser's PUT and GET from the listed origin only", async () => {
      const path = `browser/${crypto.randomUUID()}.txt`;
      const upload = await sign("/storage/signed-upload-url", { path, contentType: "text/plain" });
      const { storage } = t.config;
      expect(storage.driver === "s3" && upload.url.startsWith(`${storage.endPoint}/${S3_CORS_BUCKET}/`)).toBe(true);
      const asked = await preflight(upload.url, S3_CORS_ORIGIN, "PUT", "content-type");
      expect(asked.status).toBe(200);
      expect(asked.headers.get("access-control-allow-origin")).not.toBeNull();
      expect(asked.headers.get("access-control-allow-methods")).toContain("PUT");
      expect((await preflight(upload.url, UNLISTED, "PUT", "content-type")).status).toBe(403);

      const put = await fetch(upload.url, {
        method: "PUT",
        headers: { origin: S3_CORS_ORIGIN, "content-type": "text/plain" },
        body: "straight to the bucket",
      });
      expect(put.status).toBe(200);
      expect(put.headers.get("access-control-allow-origin")).toBe(S3_CORS_ORIGIN);

      const download = await sign(`/storage/signed-download-url?filename=${encodeURIComponent(path)}`);
      const get = await fetch(download.url, { headers: { origin: S3_CORS_ORIGIN } });
      expect(get.headers.get("access-control-allow-origin")).toBe(S3_CORS_ORIGIN);
      expect(await get.text()).toBe("straight to the bucket");
    });
  });
}

describe("CORS_ORIGINS configuration", () => {
  const load = (env: Record<string, string>) => loadConfig({ DATA_DIR: "/tmp/actuate-unused", ...env }).cors;

  test("lists origins without a trailing slash, lower-cased; * means any; CORS_ORIGINS wins over ALLOWED_ORIGINS", () => {
    expect(load({ CORS_ORIGINS: "https://App.example.com/, http://localhost:5173" })).toEqual({
      listed: ["https://app.example.com", "http://localhost:5173"],
      any: false,
    });
    expect(load({ CORS_ORIGINS: "*" })).toEqual({ listed: [], any: true });
    expect(load({ ALLOWED_ORIGINS: "tauri://localhost" })).toEqual({ listed: ["tauri://localhost"], any: false });
    expect(load({ CORS_ORIGINS: "https://a.example", ALLOWED_ORIGINS: "https://b.example" }).listed).toEqual([
      "https://a.example",
    ]);
    expect(load({})).toEqual({ listed: [], any: false });
  });

  test("an entry that is no origin stops start-up, named with its variable", () => {
    expect(() => load({ CORS_ORIGINS: "https://app.example.com/path" })).toThrow(ConfigError);
    expect(() => load({ ALLOWED_ORIGINS: "app.example.com" })).toThrow(/ALLOWED_ORIGINS: "app.example.com"/);
  });
});
