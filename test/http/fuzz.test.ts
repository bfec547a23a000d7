import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { dialects } from "../support/databases.ts";
import { LiveClient } from "../support/live-client.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

// Thousands of malformed requests in CI; FUZZ_RUNS=20000 (or more) for a longer run by hand.
const RUNS = Number(process.env.FUZZ_RUNS ?? 700);
const MiB = 1024 * 1024;

/** The routes, with the method each takes: most fuzzed requests hit one, so their bodies reach the handlers. */
const ROUTES: [method: string, path: string][] = [
  ["GET", "/actions"],
  ["POST", "/actions/test.echo/invoke"],
  ["POST", "/actions/test.count/invoke"],
  ["GET", "/actions/test.echo/contract"],
  ["POST", "/actions/test.attach/invoke"],
  ["POST", "/actions/nope/invoke"],
  ["GET", "/executions"],
  ["GET", "/executions/requests/x"],
  ["GET", "/runs"],
  ["POST", "/runs/x/cancel"],
  ["POST", "/query"],
  ["POST", "/query?format=objects"],
  ["PUT", "/storage/upload"],
  ["POST", "/storage/signed-upload-url"],
  ["GET", "/storage/signed-download-url?filename=a.txt"],
  ["DELETE", "/storage/files?filename=a.txt"],
  ["PUT", "/storage/signed/abc"],
  ["GET", "/session"],
  ["POST", "/mcp"],
  ["GET", "/readyz"],
  ["GET", "/.well-known/oauth-protected-resource/mcp"],
];
const KNOWN_PATHS = ROUTES.map(([, path]) => path);

/** JSON text nested `levels` deep. */
const nested = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;

const uuid = fc.uuid();
/** Bodies a hostile or careless client sends: JSON of any shape, envelopes with odd parts, text, deep nesting. */
const body = fc.oneof(
  fc.json(),
  fc.string({ unit: "binary", maxLength: 300 }),
  fc
    .record({ requestId: fc.oneof(uuid, fc.string(), fc.integer()), input: fc.jsonValue() })
    .map((b) => JSON.stringify(b)),
  fc
    .record({
      requestId: uuid,
      input: fc.dictionary(fc.string(), fc.oneof(fc.string({ unit: "binary" }), fc.jsonValue())),
    })
    .map((b) => JSON.stringify(b)),
  fc.record({ query: fc.jsonValue() }).map((b) => JSON.stringify(b)),
  fc.integer({ min: 60, max: 20_000 }).map((n) => `{"requestId":"${crypto.randomUUID()}","input":{"x":${nested(n)}}}`),
  fc.constantFrom('{"text":"\\ud800"}', '{"requestId":"\\u0000","input":{}}', "", "null", "[]", "{", '"'),
);

for (const dialect of dialects) {
  describe(`fuzz (${dialect.name})`, () => {
    let t: TestServer;
    let user: string;
    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("basic") });
      user = await t.userToken("fuzz-user");
    });
    afterAll(() => t.stop());

    const expectRefusalShape = async (response: Response, what: string) => {
      expect(response.status, what).toBeLessThan(500);
      if (response.status < 400) {
        await response.arrayBuffer();
        return;
      }
      const text = await response.text();
      expect(response.headers.get("content-type") ?? "", what).toContain("application/json");
      const parsed = JSON.parse(text) as { ok?: unknown; error?: unknown };
      expect(parsed.ok, what).toBe(false);
      expect(parsed.error, what).toBeDefined();
    };

    test("no HTTP request, however malformed, gets a 5xx; every error body is JSON with ok:false", async () => {
      const rssBefore = process.memoryUsage().rss;
      await fc.assert(
        fc.asyncProperty(
          fc.record({
            route: fc.oneof(
              { weight: 8, arbitrary: fc.constantFrom(...ROUTES) },
              {
                weight: 1,
                arbitrary: fc.tuple(
                  fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH"),
                  fc.oneof(
                    fc.constantFrom(...KNOWN_PATHS),
                    fc
                      .tuple(fc.constantFrom(...KNOWN_PATHS), fc.webSegment())
                      .map(([p, s]) => `${p.split("?")[0]}/${s}`),
                    fc.webPath(),
                  ),
                ),
              },
            ),
            token: fc.oneof(
              { weight: 6, arbitrary: fc.constantFrom<string | null>(t.serviceKey, user) },
              { weight: 1, arbitrary: fc.constantFrom<string | null>("garbage", null, "") },
            ),
            contentType: fc.constantFrom(
              "application/json",
              "multipart/form-data",
              "multipart/form-data; boundary=x",
              "text/plain",
              null,
            ),
            path_header: fc.option(fc.string({ unit: "binary", maxLength: 60 })),
            body,
          }),
          async (r) => {
            const [method, path] = r.route;
            const headers: Record<string, string> = {};
            if (r.contentType) headers["content-type"] = r.contentType;
            if (r.path_header !== null) headers.path = encodeURIComponent(r.path_header);
            const withBody = method !== "GET";
            const response = await t.fetch(path.startsWith("/") ? path : `/${path}`, {
              method,
              headers,
              body: withBody ? r.body : undefined,
              token: r.token,
            });
            await expectRefusalShape(response as unknown as Response, `${method} ${path} ${r.body.slice(0, 80)}`);
          },
        ),
        { numRuns: RUNS },
      );
      expect((await t.fetch("/healthz")).status).toBe(200);
      expect((await (await t.invoke("test.echo", { text: "still fine" })).json()).execution.status).toBe("succeeded");
      expect(process.memoryUsage().rss - rssBefore).toBeLessThan(300 * MiB);
    }, 120_000);

    test("no MCP message gets a 5xx or a non-JSON answer", async () => {
      const name = fc.constantFrom("test.echo", "test.fail", "test.attach", "query", "describe", "nope");
      await fc.assert(
        fc.asyncProperty(
          fc.record({
            jsonrpc: fc.oneof(fc.constant("2.0"), fc.jsonValue()),
            id: fc.oneof(fc.integer(), fc.string(), fc.constant(null)),
            method: fc.oneof(
              fc.constantFrom("tools/call", "tools/list", "resources/read", "resources/list", "ping", "initialize"),
              fc.string(),
            ),
            params: fc.oneof(
              fc.record({ name, arguments: fc.jsonValue() }),
              fc.record({ uri: fc.oneof(fc.constant("service://local/schema"), fc.string()) }),
              fc.jsonValue(),
            ),
          }),
          async (message) => {
            const response = await t.fetch("/mcp", {
              method: "POST",
              headers: {
                "content-type": "application/json",
                accept: "application/json, text/event-stream",
                "mcp-protocol-version": "2025-11-25",
              },
              body: JSON.stringify(message),
            });
            expect(response.status, JSON.stringify(message).slice(0, 200)).toBeLessThan(500);
            if (response.status === 202) return;
            const answer = JSON.parse(await response.text());
            expect(answer.jsonrpc).toBe("2.0");
          },
        ),
        { numRuns: Math.ceil(RUNS / 2) },
      );
    }, 120_000);

    test("a socket fed malformed messages answers each and still signs in", async () => {
      const client = await LiveClient.connect(t.url);
      try {
        const messages = fc.sample(
          fc.oneof(
            fc.jsonValue().map((v) => JSON.stringify(v)),
            fc.string({ unit: "binary", maxLength: 200 }),
            fc
              .record({
                op: fc.constantFrom("add-query", "remove-query", "subscribe-stream", "transact", "init", "x"),
                q: fc.jsonValue(),
                "execution-id": fc.oneof(fc.uuid(), fc.string()),
                "access-token": fc.string(),
              })
              .map((m) => JSON.stringify(m)),
          ),
          { numRuns: Math.ceil(RUNS / 4) },
        );
        for (const message of messages) client.send(message);
        client.send({ op: "init", "access-token": t.serviceKey, "client-event-id": "last" });
        expect(await client.next((m) => m.op === "init-ok", 20_000)).toBeDefined();
        expect(client.closed).toBeNull();
      } finally {
        client.close();
      }
    }, 60_000);
  });
}
