import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Elysia } from "elysia";
import postgres from "postgres";
import { addUser } from "../../src/auth/users.ts";
import { errorHandling } from "../../src/http/errors.ts";
import { oauthRoutes } from "../../src/http/oauth.ts";
import { observeRequests } from "../../src/http/observe.ts";
import type { LogFields } from "../../src/observe/log.ts";
import { Telemetry } from "../../src/observe/telemetry.ts";
import { type Dialect, dialects } from "../support/databases.ts";
import { Browser, beginSignIn, csrfOf, formAction } from "../support/oauth-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";

// Signing in hashes passwords (argon2id): slow on a loaded 2-core machine.
setDefaultTimeout(30_000);

const password = "correct horse battery staple";
const INTERNAL = { ok: false, error: "internal_error", message: "the server failed to answer this request" };

interface Line {
  message: string;
  fields: LogFields;
}

/** A log that keeps its lines, for a test to read. */
function keptLog() {
  const lines: Line[] = [];
  const log = (message: string, fields: LogFields = {}) => {
    lines.push({ message, fields });
  };
  /** The error line logged for the request `reqId`: it carries the stack, and nothing of a failed query's parameters. */
  const failureOf = (reqId: string) => {
    const line = lines.find(
      (l) => l.fields.level === "error" && l.fields.reqId === reqId && l.message.includes("\n    at "),
    );
    expect(line).toBeDefined();
    expect(lines.map((l) => l.message).join("\n")).not.toContain("params:");
    return line as Line;
  };
  return { log, lines, failureOf };
}

/** Runs a statement on the test's database from outside the server, as an operator (or an accident) would. */
async function onDatabase(url: string, statement: string) {
  if (url.startsWith("postgres")) {
    const client = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await client.unsafe(statement);
    } finally {
      await client.end();
    }
    return;
  }
  const db = new Database(url.replace(/^sqlite:/, ""));
  try {
    db.run(statement);
  } finally {
    db.close();
  }
}

for (const dialect of dialects) {
  describe(`the authority when something fails (${dialect.name})`, () => {
    let t: TestServer;
    const kept = keptLog();

    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("claims"), log: kept.log });
      await addUser(t.store, "alice", password);
    });

    afterAll(async () => {
      await t?.stop();
    });

    /** Runs `during` while `table` is renamed away: every statement on it fails, as a broken store's would. */
    async function without(table: string, during: () => Promise<void>) {
      await onDatabase(t.config.databaseUrl, `alter table ${table} rename to ${table}_away`);
      try {
        await during();
      } finally {
        await onDatabase(t.config.databaseUrl, `alter table ${table}_away rename to ${table}`);
      }
    }

    test("a store failure while signing in is internal_error with a fixed message; the log has its stack and request id", async () => {
      const { authorizationUrl } = await beginSignIn(t.url);
      const browser = new Browser();
      const page = await browser.visit(authorizationUrl.toString());
      expect(page.status).toBe(200);
      await without("users", async () => {
        const answer = await browser.visit(formAction(page.html, t.url), {
          method: "POST",
          form: { csrf: csrfOf(page.html), user: "alice", password },
          headers: { "x-request-id": "sign-in-broken" },
        });
        expect(answer.status).toBe(500);
        expect(JSON.parse(answer.html)).toEqual(INTERNAL);
      });
      expect(kept.failureOf("sign-in-broken").message).toContain("users");
    });

    test("a store failure inside oidc-provider (authorize, token) is internal_error, never its server_error text", async () => {
      const { authorizationUrl, provider } = await beginSignIn(t.url);
      await without("oauth_records", async () => {
        // A person's browser asks for a page; oidc-provider renders its error for it.
        const authorize = await fetch(authorizationUrl, {
          headers: { accept: "text/html", "x-request-id": "authorize-broken" },
          redirect: "manual",
        });
        expect(authorize.status).toBe(500);
        expect(authorize.headers.get("content-type")).toStartWith("application/json");
        expect(await authorize.json()).toEqual(INTERNAL);
        const token = await fetch(`${t.url}/oauth/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", "x-request-id": "token-broken" },
          body: new URLSearchParams({
            grant_type: "refresh_token",
            refresh_token: "whatever",
            client_id: provider.client?.client_id as string,
          }),
        });
        expect(token.status).toBe(500);
        expect(await token.json()).toEqual(INTERNAL);
      });
      kept.failureOf("authorize-broken");
      kept.failureOf("token-broken");
    });

    test("a client that turned invalid during the sign-in is refused with its OAuth error, not a failure", async () => {
      let redirect = "cursor://agent/cb";
      const site = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: (request) => Response.json({ client_id: request.url, redirect_uris: [redirect] }),
      });
      try {
        const clientId = `http://127.0.0.1:${site.port}/agent.json`;
        const challenge = new Bun.CryptoHasher("sha256").update("v".repeat(64)).digest("base64url");
        const browser = new Browser();
        const page = await browser.visit(
          `${t.url}/oauth/authorize?${new URLSearchParams({
            response_type: "code",
            client_id: clientId,
            redirect_uri: redirect,
            code_challenge: challenge,
            code_challenge_method: "S256",
          })}`,
        );
        expect(page.status).toBe(200);
        // The document now names a cleartext redirect URI, and the hour it was kept for is over.
        redirect = "http://agent.example.com/cb";
        await t.store.oauth.destroy("Client", clientId);
        const answer = await browser.visit(formAction(page.html, t.url), {
          method: "POST",
          form: { csrf: csrfOf(page.html), user: "alice", password },
        });
        expect(answer.status).toBe(400);
        expect(JSON.parse(answer.html)).toMatchObject({ ok: false, error: "invalid_redirect_uri" });
      } finally {
        site.stop(true);
      }
    });

    test("a sign-in form over 16 KiB is 413 payload_too_large, not an expired sign-in", async () => {
      const { authorizationUrl } = await beginSignIn(t.url);
      const browser = new Browser();
      const page = await browser.visit(authorizationUrl.toString());
      const answer = await browser.visit(formAction(page.html, t.url), {
        method: "POST",
        form: { csrf: csrfOf(page.html), user: "alice", password: "x".repeat(20 * 1024) },
      });
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.html)).toMatchObject({ ok: false, error: "payload_too_large" });
    });
  });
}

/** PostgreSQL reached through a relay the test can cut: the database goes away under a running server. */
function throughProxy(pg: Dialect, proxy: ReturnType<typeof tcpProxy>): Dialect {
  return {
    name: "postgres",
    async create() {
      const database = await pg.create();
      const url = new URL(database.url);
      url.port = new URL(proxy.url).port;
      return { url: url.toString(), drop: database.drop };
    },
  };
}

const pg = dialects.find((d) => d.name === "postgres");

describe.skipIf(!pg)("the authority when the database cannot be reached", () => {
  test("sign-in, authorize and token answer 503 database_unavailable with Retry-After", async () => {
    const postgresPort = Number(new URL(process.env.TEST_DATABASE_URL as string).port || 5432);
    const proxy = tcpProxy(() => postgresPort);
    const t = await startTestServer(throughProxy(pg as Dialect, proxy), { release: fixture("claims") });
    try {
      await addUser(t.store, "alice", password);
      const { authorizationUrl, provider } = await beginSignIn(t.url);
      const browser = new Browser();
      const page = await browser.visit(authorizationUrl.toString());
      expect(page.status).toBe(200);

      proxy.stop();
      proxy.cutAll();
      const signIn = await browser.visit(formAction(page.html, t.url), {
        method: "POST",
        form: { csrf: csrfOf(page.html), user: "alice", password },
      });
      expect(signIn.status).toBe(503);
      expect(signIn.headers?.get("retry-after")).toBe("5");
      expect(JSON.parse(signIn.html)).toMatchObject({ ok: false, error: "database_unavailable" });
      const answers = [
        await fetch(authorizationUrl, { headers: { accept: "text/html" }, redirect: "manual" }),
        await fetch(`${t.url}/oauth/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            grant_type: "refresh_token",
            refresh_token: "whatever",
            client_id: provider.client?.client_id as string,
          }),
        }),
      ];
      for (const answer of answers) {
        expect(answer.status).toBe(503);
        expect(answer.headers.get("retry-after")).toBe("5");
        expect(await answer.json()).toMatchObject({ ok: false, error: "database_unavailable" });
      }
    } finally {
      proxy.stop();
      await t.stop();
    }
  });
});

describe("the relay to the authority when its loopback server fails", () => {
  test("a connection refused or cut is internal_error, logged with the request id (not database_unavailable)", async () => {
    const cutting = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        open: (socket) => void socket.end(),
        data() {},
      },
    });
    const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const refusing = `http://127.0.0.1:${closed.port}`;
    closed.stop(true);
    const kept = keptLog();
    let origin = `http://127.0.0.1:${cutting.port}`;
    const app = new Elysia()
      .use(observeRequests(new Telemetry(), kept.log))
      .use(errorHandling(kept.log, () => []))
      .use(oauthRoutes({ authority: async () => ({ origin }), publicUrl: () => "http://127.0.0.1:1", log: kept.log }))
      .listen({ port: 0, hostname: "127.0.0.1" });
    try {
      for (const [name, at] of [
        ["cut", origin],
        ["refused", refusing],
      ] as const) {
        origin = at;
        const answer = await fetch(`http://127.0.0.1:${app.server?.port}/oauth/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", "x-request-id": `relay-${name}` },
          body: "grant_type=refresh_token&refresh_token=x&client_id=y",
        });
        expect(answer.status).toBe(500);
        expect(await answer.json()).toEqual(INTERNAL);
        kept.failureOf(`relay-${name}`);
      }
      // Without an X-Request-Id of the caller's, the failure names the id the request's own line has.
      const unnamed = await fetch(`http://127.0.0.1:${app.server?.port}/oauth/token`, { method: "POST" });
      expect(unnamed.status).toBe(500);
      // The request's own line is written once its answer has gone.
      const reqId = await eventually(
        () =>
          kept.lines.find((l) => l.message === "POST /oauth/* 500" && /^r/.test(String(l.fields.reqId)))?.fields.reqId,
      );
      kept.failureOf(reqId as string);
    } finally {
      await app.stop(true);
      cutting.stop(true);
    }
  });
});
