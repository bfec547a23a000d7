import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { eventually, fixture, startTestServer, type TestResponse, type TestServer } from "../support/server.ts";

// Issue #44: variables and secrets over HTTP, on an environment's host (/variables) and on the apex
// (/environments/{handle}/variables). A secret's value is in no answer.

const SECRETS_KEY = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64");
const SECRET = `sk_live_${crypto.randomUUID().replaceAll("-", "")}`;
const ANOTHER_SECRET = `sk_live_${crypto.randomUUID().replaceAll("-", "")}`;

const json = (body: unknown, method = "PUT"): RequestInit => ({
  method,
  headers: { "content-type": "application/json" },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

/** A refusal's body is the JSON error shape, with its code. */
async function refused(res: TestResponse, status: number, code: string) {
  const text = await res.text();
  expect({ status: res.status, text }).toMatchObject({ status, text: expect.any(String) });
  expect(JSON.parse(text)).toMatchObject({ ok: false, error: code, message: expect.any(String) });
  return JSON.parse(text);
}

/** Every example of a schema document whose `secret` is true carries no `value`. */
function secretExamples(node: unknown, found: Record<string, unknown>[] = []): Record<string, unknown>[] {
  if (Array.isArray(node)) for (const item of node) secretExamples(item, found);
  else if (node !== null && typeof node === "object") {
    const record = node as Record<string, unknown>;
    if (record.secret === true) found.push(record);
    for (const value of Object.values(record)) secretExamples(value, found);
  }
  return found;
}

const ROUTES: [string, string, unknown?][] = [
  ["GET", "/variables"],
  ["GET", "/variables/REGION"],
  ["PUT", "/variables/REGION", { value: "us" }],
  ["DELETE", "/variables/REGION"],
];

for (const dialect of dialects) {
  describe(`variables on an environment's host (${dialect.name})`, () => {
    let t: TestServer;
    beforeAll(async () => {
      t = await startTestServer(dialect, { env: { SECRETS_KEY } });
    }, 60_000);
    afterAll(() => t?.stop());

    test("every route: no credential 401, a user token 403, both JSON", async () => {
      const user = await t.userToken("alice");
      for (const [method, path, body] of ROUTES) {
        const init = body === undefined ? { method } : json(body, method);
        await refused(await t.fetch(path, { ...init, token: null }), 401, "unauthorized");
        await refused(await t.fetch(path, { ...init, token: user }), 403, "access_denied");
      }
    });

    test("set before any release declares it, list, replace, get one, unset", async () => {
      const created = await t.fetch("/variables/REGION", json({ value: "us" }));
      expect(created.status).toBe(201);
      expect(await created.json()).toMatchObject({
        name: "REGION",
        secret: false,
        value: "us",
        set: true,
        declared: false,
        updatedBy: expect.stringMatching(/^service:/),
        updatedAt: expect.any(String),
      });
      const replaced = await t.fetch("/variables/REGION", json({ value: "ap" }));
      expect(replaced.status).toBe(200);
      expect((await replaced.json()).value).toBe("ap");
      expect(await (await t.fetch("/variables/REGION")).json()).toMatchObject({ name: "REGION", value: "ap" });
      const list = await (await t.fetch("/variables")).json();
      expect(list.items.map((v: { name: string }) => v.name)).toContain("REGION");

      const gone = await t.fetch("/variables/REGION", { method: "DELETE" });
      expect(gone.status).toBe(200);
      expect(await gone.json()).toEqual({ ok: true });
      await refused(await t.fetch("/variables/REGION", { method: "DELETE" }), 404, "variable_not_found");
      await refused(await t.fetch("/variables/REGION"), 404, "variable_not_found");
    });

    test("a secret's value is in no answer: PUT, GET one, GET list, OpenAPI", async () => {
      const put = await t.fetch("/variables/STRIPE_KEY", json({ value: SECRET, secret: true }));
      expect(put.status).toBe(201);
      const putText = await put.text();
      expect(putText).not.toContain(SECRET);
      expect(JSON.parse(putText)).toMatchObject({ name: "STRIPE_KEY", secret: true, set: true });
      expect(JSON.parse(putText)).not.toHaveProperty("value");

      // Replaced without saying `secret`: it stays a secret.
      const again = await t.fetch("/variables/STRIPE_KEY", json({ value: ANOTHER_SECRET }));
      expect(again.status).toBe(200);
      const againText = await again.text();
      expect(againText).not.toContain(ANOTHER_SECRET);
      expect(JSON.parse(againText)).toMatchObject({ secret: true });

      for (const path of ["/variables/STRIPE_KEY", "/variables", "/openapi.json"]) {
        const text = await (await t.fetch(path)).text();
        expect(text).not.toContain(SECRET);
        expect(text).not.toContain(ANOTHER_SECRET);
      }
      const one = await (await t.fetch("/variables/STRIPE_KEY")).json();
      expect(one).not.toHaveProperty("value");
    });

    test("the OpenAPI document has the routes and no example value of a secret", async () => {
      const doc = await (await t.fetch("/openapi.json")).json();
      expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/variables", "/variables/{name}"]));
      expect(Object.keys(doc.paths["/variables/{name}"])).toEqual(expect.arrayContaining(["get", "put", "delete"]));
      expect(doc.components.schemas.Variable).toBeDefined();
      const secrets = secretExamples(doc.paths);
      expect(secrets.length).toBeGreaterThan(0);
      for (const example of secrets) expect(example).not.toHaveProperty("value");
    });

    test("refusals are 400 JSON: names, short secrets, malformed bodies; never 500", async () => {
      await refused(await t.fetch("/variables/1BAD", json({ value: "x" })), 400, "invalid_variable");
      await refused(await t.fetch("/variables/lower", json({ value: "x" })), 400, "invalid_variable");
      await refused(await t.fetch("/variables/%E0%A4%A", json({ value: "x" })), 400, "invalid_variable");
      const short = await refused(
        await t.fetch("/variables/SHORT_SECRET", json({ value: "1234567", secret: true })),
        400,
        "invalid_variable",
      );
      expect(JSON.stringify(short)).not.toContain("1234567");
      for (const body of [
        "{",
        "null",
        "[]",
        { value: 5 },
        { value: "x", secret: "yes" },
        { value: "x", extra: 1 },
        {},
      ]) {
        await refused(await t.fetch("/variables/REGION", json(body)), 400, "invalid_request");
      }
      await refused(await t.fetch("/variables/REGION", { method: "PUT" }), 400, "invalid_request");
      const huge = await t.fetch("/variables/REGION", json({ value: "x".repeat(400 * 1024) }));
      expect(huge.status).toBe(413);
      expect(await huge.json()).toMatchObject({ ok: false, error: "payload_too_large" });
      const big = await t.fetch("/variables/REGION", json({ value: "x".repeat(64 * 1024 + 1) }));
      await refused(big, 400, "invalid_variable");
      // 64 KiB that JSON escapes to six times as much is still a value it takes.
      const escaped = await t.fetch("/variables/ESCAPED", json({ value: "\u0001".repeat(64 * 1024) }));
      expect(escaped.status).toBe(201);
      // Nothing of those was stored.
      const names = (await (await t.fetch("/variables")).json()).items.map((v: { name: string }) => v.name);
      expect(names).not.toContain("SHORT_SECRET");
    });

    test("a release's declarations show as declared and required", async () => {
      await t.fetch("/variables/STRIPE_KEY", json({ value: SECRET, secret: true }));
      await t.publish(fixture("vars-surface"));
      // The server follows the publish within RELEASE_POLL_MS.
      const { items } = await eventually(async () => {
        const list = await (await t.fetch("/variables")).json();
        return list.items.some((v: { name: string }) => v.name === "REGION") && list;
      });
      const byName = Object.fromEntries(items.map((v: { name: string }) => [v.name, v]));
      expect(byName.REGION).toMatchObject({ declared: true, required: false, set: false, secret: false });
      expect(byName.STRIPE_KEY).toMatchObject({ declared: true, required: true, set: true, secret: true });
      expect(JSON.stringify(items)).not.toContain(SECRET);
    });
  });

  describe(`variables in hosting mode: the environment's host and the apex (${dialect.name})`, () => {
    let t: HostingServer;
    const keys = {} as Record<"acmeEnv" | "acmeOrg" | "betaEnv" | "betaOrg", string>;
    beforeAll(async () => {
      t = await startHostingServer(dialect, {
        env: { SECRETS_KEY },
        environments: [
          { handle: "acme-prod", organization: "acme" },
          { handle: "beta-prod", organization: "beta" },
        ],
      });
      keys.acmeEnv = await t.key({ environment: "acme-prod" });
      keys.acmeOrg = await t.key({ organization: "acme" });
      keys.betaEnv = await t.key({ environment: "beta-prod" });
      keys.betaOrg = await t.key({ organization: "beta" });
    }, 60_000);
    afterAll(() => t?.stop());

    test("on the environment's host: its key and its organization's may, another's are refused", async () => {
      const user = await t.userToken("acme-prod", "alice");
      for (const [method, path, body] of ROUTES) {
        const init = body === undefined ? { method } : json(body, method);
        await refused(await t.fetch("acme-prod", path, { ...init, token: null }), 401, "unauthorized");
        await refused(await t.fetch("acme-prod", path, { ...init, token: keys.betaEnv }), 401, "unauthorized");
        await refused(await t.fetch("acme-prod", path, { ...init, token: keys.betaOrg }), 401, "unauthorized");
        await refused(await t.fetch("acme-prod", path, { ...init, token: user }), 403, "access_denied");
      }
      const byEnv = await t.fetch("acme-prod", "/variables/REGION", { ...json({ value: "eu" }), token: keys.acmeEnv });
      expect(byEnv.status).toBe(201);
      const byOrg = await t.fetch("acme-prod", "/variables/REGION", { ...json({ value: "us" }), token: keys.acmeOrg });
      expect(byOrg.status).toBe(200);
      expect(await byOrg.json()).toMatchObject({ value: "us", updatedBy: expect.stringMatching(/^service:key-/) });
      // Another environment's variables are its own.
      const beta = await (await t.fetch("beta-prod", "/variables", { token: keys.betaEnv })).json();
      expect(beta.items.map((v: { name: string }) => v.name)).not.toContain("REGION");
    });

    const apex = (path: string, token: string | null, init: RequestInit = {}) =>
      t.fetch(null, path, { ...init, token });

    test("on the apex: operator, the organization's and the environment's keys; others 401/404", async () => {
      const base = "/environments/acme-prod/variables";
      const user = await t.userToken("acme-prod", "bob");
      const routes: [string, string, unknown?][] = [
        ["GET", base],
        ["GET", `${base}/REGION`],
        ["PUT", `${base}/REGION`, { value: "ap" }],
        ["DELETE", `${base}/NOT_SET`],
      ];
      for (const [method, path, body] of routes) {
        const init = body === undefined ? { method } : json(body, method);
        await refused(await apex(path, null, init), 401, "unauthorized");
        await refused(await apex(path, user, init), 401, "unauthorized");
        await refused(await apex(path, keys.betaOrg, init), 404, "environment_not_found");
        await refused(await apex(path, keys.betaEnv, init), 404, "environment_not_found");
      }
      for (const token of [t.serviceKey, keys.acmeOrg, keys.acmeEnv]) {
        const put = await apex(`${base}/REGION`, token, json({ value: "ap" }));
        expect(put.status).toBe(200);
        expect((await apex(base, token)).status).toBe(200);
      }
      await refused(await apex(`${base}/NOT_SET`, t.serviceKey, { method: "DELETE" }), 404, "variable_not_found");
      await refused(await apex("/environments/nowhere/variables", t.serviceKey), 404, "environment_not_found");
    });

    test("on the apex: a secret set there is in no answer, and the environment's host sees it set", async () => {
      const base = "/environments/acme-prod/variables";
      const put = await apex(`${base}/STRIPE_KEY`, keys.acmeOrg, json({ value: SECRET, secret: true }));
      expect(put.status).toBe(201);
      const putText = await put.text();
      expect(putText).not.toContain(SECRET);
      expect(JSON.parse(putText)).toMatchObject({ name: "STRIPE_KEY", secret: true, updatedBy: expect.any(String) });
      for (const path of [base, `${base}/STRIPE_KEY`, "/openapi.json"]) {
        expect(await (await apex(path, t.serviceKey)).text()).not.toContain(SECRET);
      }
      const seen = await (await t.fetch("acme-prod", "/variables/STRIPE_KEY", { token: keys.acmeEnv })).json();
      expect(seen).toMatchObject({ secret: true, set: true });
      expect(seen).not.toHaveProperty("value");
      await refused(
        await apex(`${base}/SHORT`, t.serviceKey, json({ value: "short", secret: true })),
        400,
        "invalid_variable",
      );
      await refused(await apex(`${base}/REGION`, t.serviceKey, json("{")), 400, "invalid_request");
      const gone = await apex(`${base}/STRIPE_KEY`, keys.acmeEnv, { method: "DELETE" });
      expect(await gone.json()).toEqual({ ok: true });
    });

    test("the apex's OpenAPI document has the routes and no example value of a secret", async () => {
      const doc = await (await apex("/openapi.json", t.serviceKey)).json();
      expect(Object.keys(doc.paths)).toEqual(
        expect.arrayContaining(["/environments/{handle}/variables", "/environments/{handle}/variables/{name}"]),
      );
      const secrets = secretExamples(doc.paths);
      expect(secrets.length).toBeGreaterThan(0);
      for (const example of secrets) expect(example).not.toHaveProperty("value");
    });
  });
}
