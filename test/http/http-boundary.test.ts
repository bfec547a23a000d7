import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { importJWK, SignJWT } from "jose";
import { authorityKeys } from "../../src/auth/authority/keys.ts";
import { GRANT_CLAIM } from "../../src/auth/sign-ins.ts";
import { revokeUserToken } from "../../src/auth/tokens.ts";
import { addUser } from "../../src/auth/users.ts";
import { dialects } from "../support/databases.ts";
import { storeGrant } from "../support/oauth-client.ts";
import { eventually, fixture, startTestServer, type TestResponse, type TestServer } from "../support/server.ts";

const MiB = 1024 * 1024;

const endpoints: [method: string, path: string][] = [
  ["POST", "/actions/test.echo/invoke"],
  ["GET", "/actions/test.echo/contract"],
  ["GET", "/executions"],
  ["GET", `/executions/${crypto.randomUUID()}`],
  ["GET", `/executions/${crypto.randomUUID()}/result`],
  ["GET", `/executions/requests/${crypto.randomUUID()}`],
  ["GET", "/runs"],
  ["GET", `/runs/${crypto.randomUUID()}`],
  ["POST", `/runs/${crypto.randomUUID()}/cancel`],
  ["GET", "/openapi.json"],
  ["GET", "/describe"],
  ["GET", "/sign-ins"],
  ["DELETE", "/sign-ins/no-such-sign-in"],
];

async function expectJsonError(res: TestResponse, status: number, error: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toStartWith("application/json");
  const body = await res.json();
  expect(body).toMatchObject({ ok: false, error });
  return body;
}

for (const dialect of dialects) {
  describe(`HTTP boundary (${dialect.name})`, () => {
    let t: TestServer;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic") });
    });
    afterAll(() => t.stop());

    test("every endpoint but /healthz refuses a missing, unknown or malformed credential with 401", async () => {
      const metadata = `Bearer resource_metadata="${t.url}/.well-known/oauth-protected-resource/mcp"`;
      for (const [method, path] of endpoints) {
        for (const authorization of [
          null,
          "Bearer nope",
          "Basic dXNlcjpwdw==",
          `Bearer ${t.serviceKey} extra`,
          "Bearer",
        ]) {
          const headers: Record<string, string> = authorization ? { authorization } : {};
          const res = await fetch(`${t.url}${path}`, { method, headers, body: method === "POST" ? "{}" : undefined });
          await expectJsonError(res, 401, "unauthorized");
          // RFC 6750 §3.1: a bearer token that was sent and refused says so; anything else is a missing credential.
          const refused = authorization === "Bearer nope" ? ', error="invalid_token"' : "";
          expect(res.headers.get("www-authenticate")).toBe(metadata + refused);
        }
      }
      const health = await fetch(`${t.url}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ ok: true });
    });

    test("a token of the built-in authority works on every endpoint for this audience, and on none for another", async () => {
      await addUser(t.store, "matrix-user", "a long enough password");
      const { signing } = await authorityKeys(t.store.oauth, Date.now());
      const key = await importJWK(signing, "RS256");
      // The sign-in the token was issued from (the authority's grant): a token is taken while it stands.
      const grant = await storeGrant(t.store, "matrix-user");
      const mint = (audience: string, issuer = t.url) =>
        new SignJWT({ sub: "matrix-user", scope: "mcp", [GRANT_CLAIM]: grant })
          .setProtectedHeader({ alg: "RS256", kid: signing.kid as string, typ: "at+jwt" })
          .setIssuer(issuer)
          .setAudience(audience)
          .setIssuedAt()
          .setExpirationTime("5m")
          .sign(key);
      const refused = [await mint("https://other.example/mcp"), await mint(`${t.url}/mcp`, "https://other.example")];
      const accepted = await mint(`${t.url}/mcp`);
      for (const [method, path] of endpoints) {
        for (const token of refused) {
          const res = await t.fetch(path, { method, token, body: method === "POST" ? "{}" : undefined });
          await expectJsonError(res, 401, "unauthorized");
          expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"');
        }
        const res = await t.fetch(path, { method, token: accepted, body: method === "POST" ? "{}" : undefined });
        expect(res.status).not.toBe(401);
      }
    });

    test("a token in the query string is never accepted", async () => {
      const res = await fetch(`${t.url}/executions?access_token=${t.serviceKey}`);
      await expectJsonError(res, 401, "unauthorized");
    });

    test("a revoked user token stops working within TOKEN_RECHECK_MS", async () => {
      const token = await t.userToken("dora");
      expect((await t.fetch("/executions", { token })).status).toBe(200);
      await revokeUserToken(t.store, token.slice(0, 14));
      // The server may take the token it vouched for a moment ago until the bound (test/auth/ pins it exactly).
      await eventually(
        async () => (await t.fetch("/executions", { token })).status === 401,
        5 * t.config.tokenRecheckMs,
      );
      await expectJsonError(await t.fetch("/executions", { token }), 401, "unauthorized");
    }, 15_000);

    test("an unknown path is a JSON 404; a known path with a wrong method is a JSON 405 with Allow", async () => {
      await expectJsonError(await t.fetch("/nope"), 404, "not_found");
      await expectJsonError(await t.fetch("/actions/test.echo/nope", { method: "POST" }), 404, "not_found");
      const id = crypto.randomUUID();
      const wrong: [method: string, path: string, allow: string][] = [
        ["GET", "/actions/test.echo/invoke", "POST"],
        ["DELETE", `/executions/${id}`, "GET, HEAD"],
        ["POST", `/executions/${id}/result`, "GET, HEAD"],
        ["PUT", "/query", "POST"],
        ["GET", `/runs/${id}/cancel`, "POST"],
        ["PUT", "/mcp", "POST"],
        ["POST", "/session", "GET"],
        ["POST", "/storage/files", "DELETE, GET, HEAD"],
        ["DELETE", "/releases", "GET, HEAD, POST"],
        ["GET", "/releases/t1/activate", "POST"],
        ["POST", "/stats", "GET, HEAD"],
      ];
      for (const [method, path, allow] of wrong) {
        const res = await t.fetch(path, { method, body: method === "GET" ? undefined : "{}" });
        const body = await expectJsonError(res, 405, "method_not_allowed");
        expect(res.headers.get("allow"), `${method} ${path}`).toBe(allow);
        expect(body.message).toBeString();
      }
      // Preflights are CORS's to answer, never a 405.
      expect((await t.fetch("/actions/test.echo/invoke", { method: "OPTIONS" })).status).not.toBe(405);
    });

    test("GET /session without a WebSocket upgrade is a JSON 426 upgrade_required", async () => {
      const res = await t.fetch("/session");
      await expectJsonError(res, 426, "upgrade_required");
      expect(res.headers.get("upgrade")).toBe("websocket");
      // An upgrade without its handshake headers is refused in JSON too.
      const broken = await t.fetch("/session", { headers: { connection: "upgrade", upgrade: "websocket" } });
      await expectJsonError(broken, 400, "invalid_request");
    });

    test("a body over 8 MiB is 413 payload_too_large as JSON, with Content-Length or chunked", async () => {
      const big = JSON.stringify({ requestId: crypto.randomUUID(), input: { text: "x".repeat(8 * MiB) } });
      const sized = await t.fetch("/actions/test.echo/invoke", { method: "POST", body: big });
      await expectJsonError(sized, 413, "payload_too_large");
      const chunks = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < 9; i++) controller.enqueue(new Uint8Array(MiB).fill(32));
          controller.close();
        },
      });
      const chunked = await t.fetch("/actions/test.echo/invoke", { method: "POST", body: chunks });
      await expectJsonError(chunked, 413, "payload_too_large");
      // Just under the limit is read and judged on its merits.
      const under = JSON.stringify({ requestId: crypto.randomUUID(), input: { text: "y".repeat(8 * MiB - 200) } });
      const ok = await t.fetch("/actions/test.echo/invoke", { method: "POST", body: under });
      expect(ok.status).toBe(200);
    }, 60_000);

    test("malformed envelopes are 400 invalid_request with issues", async () => {
      const cases: [body: string, where: string][] = [
        ["not json", ""],
        ["", ""],
        ["[]", ""],
        ["null", ""],
        ['"text"', ""],
        [JSON.stringify({ input: {} }), "/requestId"],
        [JSON.stringify({ requestId: "123", input: {} }), "/requestId"],
        [JSON.stringify({ requestId: 5, input: {} }), "/requestId"],
        [JSON.stringify({ requestId: crypto.randomUUID() }), "/input"],
        [JSON.stringify({ requestId: crypto.randomUUID(), input: [] }), "/input"],
        [JSON.stringify({ requestId: crypto.randomUUID(), input: "x" }), "/input"],
        [JSON.stringify({ requestId: crypto.randomUUID(), input: {}, extra: 1 }), "/extra"],
      ];
      for (const [body, where] of cases) {
        const res = await t.fetch("/actions/test.echo/invoke", { method: "POST", body });
        const json = await expectJsonError(res, 400, "invalid_request");
        expect(json.details.issues.map((i: { where: string }) => i.where)).toContain(where);
      }
    });

    test("no malformed request gets a 500 or a non-JSON answer, and nothing recorded is lost", async () => {
      const before = await (await t.invoke("test.echo", { text: "keep me" })).json();
      const paths = [
        "/actions/%ZZ/invoke",
        "/actions/../../etc/passwd/invoke",
        `/actions/${"a".repeat(5000)}/invoke`,
        "/actions/test.echo%00/invoke",
        "/executions/%00",
        "/executions/requests/%ZZ",
        `/executions?cursor=${"A".repeat(5000)}`,
        "/executions?limit=1e400",
        "/executions?limit=1&limit=2",
        "/runs/%00",
        "/runs/%ZZ/cancel",
        `/runs/${"f".repeat(5000)}`,
      ];
      const bodies = [
        "{",
        '{"requestId":"',
        "\u0000",
        '{"__proto__":{"x":1},"requestId":"x"}',
        "9".repeat(1000),
        '{"a":'.repeat(5000),
      ];
      const requests: [string, RequestInit][] = [];
      for (const path of paths) {
        requests.push([path, { method: "GET" }], [path, { method: "POST", body: "{}" }]);
      }
      for (const body of bodies) {
        requests.push([
          "/actions/test.echo/invoke",
          { method: "POST", body, headers: { "content-type": "application/json" } },
        ]);
      }
      requests.push([
        "/actions/test.echo/invoke",
        { method: "POST", body: "{}", headers: { "content-type": "multipart/form-data; boundary=x" } },
      ]);
      requests.push(["/executions", { method: "DELETE" }]);
      for (const [path, init] of requests) {
        const res = await t.fetch(path, init);
        expect(res.status, `${init.method} ${path.slice(0, 60)}`).toBeLessThan(500);
        expect(res.headers.get("content-type") ?? "").toStartWith("application/json");
        const body = await res.json();
        if (res.status >= 400) expect(body).toMatchObject({ ok: false, error: expect.any(String) });
      }
      const after = await (await t.fetch(`/executions/${before.execution.id}`)).json();
      expect(after).toMatchObject({ status: "succeeded", output: { text: "keep me" } });
    }, 60_000);
  });
}

describe("before any release is published", () => {
  test("invoke and contract answer 503 no_active_release; MCP lists only query and describe", async () => {
    const [sqlite] = dialects;
    if (!sqlite) throw new Error("no dialect");
    const t = await startTestServer(sqlite);
    try {
      await expectJsonError(await t.invoke("math.add", { a: 1, b: 2 }), 503, "no_active_release");
      await expectJsonError(await t.fetch("/actions/math.add/contract"), 503, "no_active_release");
      const listed = await t.fetch("/mcp", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      const names = (await listed.json()).result.tools.map((tool: { name: string }) => tool.name);
      expect(names).toEqual(["query", "describe"]);
    } finally {
      await t.stop();
    }
  });
});

describe("bodies that break off", () => {
  test("a client that stops sending its body is a plain 400 in the log, never an unhandled error", async () => {
    const lines: string[] = [];
    const t = await startTestServer(dialects[0] as (typeof dialects)[number], {
      release: fixture("basic"),
      log: (line) => lines.push(line),
    });
    try {
      const { hostname, port } = new URL(t.url);
      const paths = [
        "/actions/test.echo/invoke",
        "/query",
        "/mcp",
        // The authority's relay reads its bodies as the other routes do (it loads on the first of them).
        "/oauth/token",
        "/oauth/register",
        "/oauth/interaction/no-such-sign-in/login",
      ];
      // Declared below every route's limit (the authority's 64 KiB too): a larger one is refused unread.
      for (const path of paths) {
        const socket = await Bun.connect({ hostname, port: Number(port), socket: { data() {} } });
        socket.write(
          `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${t.serviceKey}\r\n` +
            `Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n` +
            `Content-Length: 60000\r\n\r\n{"requestId":`,
        );
        socket.flush();
        socket.end();
      }
      const broke = await eventually(() => {
        const found = lines.filter((line) => line.includes("the body broke off before its end (400)"));
        return found.length === paths.length ? found : null;
      }, 10_000);
      expect((broke ?? []).map((line) => line.split(":")[0]).sort()).toEqual(
        paths.map((path) => `POST ${path}`).sort(),
      );
      expect(lines.filter((line) => line.includes("unhandled error"))).toEqual([]);
      // Each request's own line: answered 400, none counted as the server's failure.
      expect(lines.filter((line) => / 5\d\d$/.test(line))).toEqual([]);
    } finally {
      await t.stop();
    }
  }, 30_000);
});
