import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import SwaggerParser from "@apidevtools/swagger-parser";
import { Authenticator } from "../../src/auth/authenticator.ts";
import { type ControlCaller, ControlOperations } from "../../src/engine/control/operations.ts";
import { DiskStorage } from "../../src/files/disk.ts";
import { controlRoutes } from "../../src/http/control.ts";
import { buildRelease } from "../../src/release/publish.ts";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { eventually, fixture, type TestResponse } from "../support/server.ts";

// Issue #41 §2: the service's control API on the apex (hosting mode), docs/decisions/control-api.md.

type Caller = "none" | "operator" | "org" | "otherOrg" | "env" | "user";
const CALLERS: Caller[] = ["none", "operator", "org", "otherOrg", "env", "user"];

/** Every file under a folder, relative to it. */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1));

for (const dialect of dialects) {
  describe(`the control API on the apex (${dialect.name})`, () => {
    let t: HostingServer;
    const tokens = {} as Record<Caller, string | null>;

    beforeAll(async () => {
      t = await startHostingServer(dialect, {
        environments: [
          { handle: "acme-prod", organization: "acme", release: fixture("basic") },
          { handle: "beta-prod", organization: "beta" },
        ],
      });
      tokens.none = null;
      tokens.operator = t.serviceKey;
      tokens.org = await t.key({ organization: "acme" });
      tokens.otherOrg = await t.key({ organization: "beta" });
      tokens.env = await t.key({ environment: "acme-prod" });
      tokens.user = await t.userToken("acme-prod", "alice");
    }, 60_000);
    afterAll(() => t?.stop());

    const apex = (path: string, init: RequestInit & { token?: string | null; json?: unknown } = {}) =>
      t.fetch(null, path, {
        ...init,
        ...(init.json === undefined
          ? {}
          : { body: JSON.stringify(init.json), headers: { "content-type": "application/json" } }),
      });

    /** A refusal's body is the JSON error shape, with its code. */
    const refused = async (res: TestResponse, status: number, code: string) => {
      expect(res.status).toBe(status);
      expect(await res.json()).toMatchObject({ ok: false, error: code, message: expect.any(String) });
    };

    // [method, path, body?, expected per caller: status or [status, code]] in the order of CALLERS; run
    // in that order, so what one caller made the next finds (a grant made, then granted again).
    type Expect = number | [number, string];
    const UNAUTHORIZED: Expect = [401, "unauthorized"];
    const MATRIX: [string, string, unknown, Expect[]][] = [
      ["GET", "/orgs", undefined, [UNAUTHORIZED, 200, 200, 200, 200, UNAUTHORIZED]],
      ["POST", "/orgs", "org", [UNAUTHORIZED, 201, [403, "access_denied"], 403, 403, UNAUTHORIZED]],
      ["GET", "/orgs/acme", undefined, [UNAUTHORIZED, 200, 200, [404, "organization_not_found"], 404, UNAUTHORIZED]],
      ["GET", "/environments", undefined, [UNAUTHORIZED, 200, 200, 200, 200, UNAUTHORIZED]],
      [
        "POST",
        "/environments",
        "env",
        [UNAUTHORIZED, 201, 201, [404, "organization_not_found"], [403, "access_denied"], UNAUTHORIZED],
      ],
      [
        "GET",
        "/environments/acme-prod",
        undefined,
        [UNAUTHORIZED, 200, 200, [404, "environment_not_found"], 200, UNAUTHORIZED],
      ],
      [
        "DELETE",
        "/environments/acme-prod",
        undefined,
        [UNAUTHORIZED, [409, "confirmation_required"], 409, 404, [403, "access_denied"], UNAUTHORIZED],
      ],
      ["GET", "/orgs/acme/keys", undefined, [UNAUTHORIZED, 200, 200, 404, 404, UNAUTHORIZED]],
      ["POST", "/orgs/acme/keys", undefined, [UNAUTHORIZED, 201, 201, 404, 404, UNAUTHORIZED]],
      [
        "DELETE",
        "/orgs/acme/keys/no-such-key",
        undefined,
        [
          UNAUTHORIZED,
          [404, "key_not_found"],
          [404, "key_not_found"],
          [404, "organization_not_found"],
          404,
          UNAUTHORIZED,
        ],
      ],
      ["GET", "/environments/acme-prod/keys", undefined, [UNAUTHORIZED, 200, 200, 404, 403, UNAUTHORIZED]],
      ["POST", "/environments/acme-prod/keys", undefined, [UNAUTHORIZED, 201, 201, 404, 403, UNAUTHORIZED]],
      [
        "DELETE",
        "/environments/acme-prod/keys/no-such-key",
        undefined,
        [UNAUTHORIZED, 404, 404, 404, 403, UNAUTHORIZED],
      ],
      ["GET", "/environments/acme-prod/grants", undefined, [UNAUTHORIZED, 200, 200, 404, 403, UNAUTHORIZED]],
      ["POST", "/environments/acme-prod/grants", { user: "bob" }, [UNAUTHORIZED, 201, 200, 404, 403, UNAUTHORIZED]],
      [
        "DELETE",
        "/environments/acme-prod/grants/nobody",
        undefined,
        [UNAUTHORIZED, [404, "grant_not_found"], 404, [404, "environment_not_found"], 403, UNAUTHORIZED],
      ],
      ["GET", "/orgs/acme/grants", undefined, [UNAUTHORIZED, 200, 200, 404, 404, UNAUTHORIZED]],
      ["POST", "/orgs/acme/grants", { user: "carol" }, [UNAUTHORIZED, 201, 200, 404, 404, UNAUTHORIZED]],
      ["DELETE", "/orgs/acme/grants/nobody", undefined, [UNAUTHORIZED, 404, 404, 404, 404, UNAUTHORIZED]],
      ["GET", "/openapi.json", undefined, [UNAUTHORIZED, 200, 200, 200, 200, UNAUTHORIZED]],
    ];

    test("every route, with no key, an operator key, an organization's key (this one and another), an environment key and a user token", async () => {
      let made = 0;
      for (const [method, path, body, expected] of MATRIX) {
        for (const [i, caller] of CALLERS.entries()) {
          // Creations get a fresh handle each, in acme.
          const json =
            body === "org"
              ? { handle: `made-${++made}` }
              : body === "env"
                ? { handle: `acme-made-${++made}`, organization: "acme" }
                : body;
          const res = await apex(path, { method, token: tokens[caller], json });
          const want = expected[i] as Expect;
          const [status, code] = typeof want === "number" ? [want, undefined] : want;
          if (res.status !== status) throw new Error(`${method} ${path} as ${caller}: ${res.status}, not ${status}`);
          const answer = await res.json();
          if (status >= 400) expect(answer).toMatchObject({ ok: false, error: code ?? expect.any(String) });
          if (status === 401) {
            const challenge = res.headers.get("www-authenticate") ?? "";
            expect(challenge.includes('error="invalid_token"')).toBe(caller === "user");
          }
        }
      }
    }, 60_000);

    test("each caller lists only what it may see", async () => {
      const handles = async (path: string, caller: Caller) =>
        ((await (await apex(path, { token: tokens[caller] })).json()).items as { handle: string }[]).map(
          (i) => i.handle,
        );
      expect(await handles("/orgs", "org")).toEqual(["acme"]);
      expect(await handles("/orgs", "otherOrg")).toEqual(["beta"]);
      expect(await handles("/orgs", "env")).toEqual([]);
      expect(await handles("/orgs?limit=100", "operator")).toEqual(expect.arrayContaining(["acme", "beta"]));
      expect(await handles("/environments", "env")).toEqual(["acme-prod"]);
      expect(await handles("/environments", "otherOrg")).toEqual(["beta-prod"]);
      const acme = await handles("/environments?limit=100", "org");
      expect(acme).toContain("acme-prod");
      expect(acme.every((h) => h.startsWith("acme-"))).toBe(true);
      const all = await handles("/environments?limit=100", "operator");
      expect(all).toEqual(expect.arrayContaining(["acme-prod", "beta-prod", "main"]));
      expect(await handles("/environments?organization=beta", "operator")).toEqual(["beta-prod"]);
      await refused(
        await apex("/environments?organization=beta", { token: tokens.org }),
        404,
        "organization_not_found",
      );

      const env = await (await apex("/environments/acme-prod")).json();
      expect(env).toEqual({
        handle: "acme-prod",
        organization: "acme",
        url: t.at("acme-prod"),
        activeVersion: "t1",
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        forkedFrom: null,
        expiresAt: null,
        schedulesPaused: false,
      });
    });

    test("an environment made over HTTP takes a release published over HTTP with its new key, and serves it", async () => {
      await refused(
        await apex("/orgs", { method: "POST", json: { handle: "gamma" }, token: tokens.org }),
        403,
        "access_denied",
      );
      const org = await apex("/orgs", { method: "POST", json: { handle: "gamma" } });
      expect(org.status).toBe(201);
      expect(await org.json()).toMatchObject({ handle: "gamma" });
      const orgKey = await (await apex("/orgs/gamma/keys", { method: "POST" })).json();
      expect(orgKey.key).toStartWith("act_o_");
      expect(orgKey).toMatchObject({ organization: "gamma", environment: null, lastUsedAt: null, revokedAt: null });

      // The organization's key makes the environment and its deploy key.
      const made = await apex("/environments", {
        method: "POST",
        json: { handle: "gamma-prod", organization: "gamma" },
        token: orgKey.key,
      });
      expect(made.status).toBe(201);
      expect(await made.json()).toMatchObject({ handle: "gamma-prod", url: t.at("gamma-prod"), activeVersion: null });
      const envKey = await (await apex("/environments/gamma-prod/keys", { method: "POST", token: orgKey.key })).json();
      expect(envKey.key).toStartWith("act_e_");

      const { code, defaultVersion } = await buildRelease(fixture("basic"));
      const published = await t.fetch("gamma-prod", "/releases", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ bundle: code, defaultVersion }),
        token: envKey.key,
      });
      expect(published.status).toBe(200);
      expect(await published.json()).toMatchObject({ version: "t1", activated: true });
      const invoked = await t.invoke("gamma-prod", "test.echo", { text: "hi" }, { token: envKey.key });
      expect(invoked.status).toBe(200);
      expect((await invoked.json()).execution.output).toEqual({ text: "hi" });

      // Listed with its prefix and last use, never its secret; revoked, it is refused.
      const listed = await (await apex("/environments/gamma-prod/keys", { token: orgKey.key })).json();
      expect(listed.items).toHaveLength(1);
      expect(listed.items[0]).toMatchObject({ id: envKey.id, prefix: envKey.prefix, environment: "gamma-prod" });
      expect(listed.items[0].lastUsedAt).not.toBeNull();
      expect(JSON.stringify(listed)).not.toContain(envKey.key);
      const revoked = await apex(`/environments/gamma-prod/keys/${envKey.id}`, { method: "DELETE", token: orgKey.key });
      expect(revoked.status).toBe(200);
      expect((await revoked.json()).revokedAt).not.toBeNull();
      await eventually(
        async () => (await t.invoke("gamma-prod", "test.echo", { text: "hi" }, { token: envKey.key })).status === 401,
      );
      // Another organization's key does not revoke acme's keys by id.
      const acmeKey = await (await apex("/orgs/acme/keys", { method: "POST" })).json();
      await refused(
        await apex(`/orgs/acme/keys/${acmeKey.id}`, { method: "DELETE", token: orgKey.key }),
        404,
        "organization_not_found",
      );
      await refused(
        await apex(`/orgs/gamma/keys/${acmeKey.id}`, { method: "DELETE", token: orgKey.key }),
        404,
        "key_not_found",
      );
    }, 60_000);

    test("grants: environment-wide and organization-wide, listed and taken away (with the person's tokens)", async () => {
      const dana = await t.userToken("acme-prod", "dana", { grant: false });
      expect((await apex("/environments/acme-prod/grants", { method: "POST", json: { user: "dana" } })).status).toBe(
        201,
      );
      expect((await apex("/orgs/acme/grants", { method: "POST", json: { user: "erin@example.com" } })).status).toBe(
        201,
      );
      const envGrants = await (await apex("/environments/acme-prod/grants?limit=100")).json();
      expect(envGrants.items).toContainEqual({
        user: "dana",
        organization: "acme",
        environment: "acme-prod",
        createdAt: expect.any(String),
      });
      expect(envGrants.items.map((g: { user: string }) => g.user)).not.toContain("erin@example.com");
      const orgGrants = await (await apex("/orgs/acme/grants?limit=100")).json();
      expect(orgGrants.items).toContainEqual(expect.objectContaining({ user: "erin@example.com", environment: null }));
      expect(orgGrants.items.map((g: { user: string }) => g.user)).not.toContain("dana");

      await refused(
        await apex("/environments/acme-prod/grants", { method: "POST", json: { user: "no spaces" } }),
        400,
        "invalid_request",
      );
      const taken = await apex("/environments/acme-prod/grants/dana", { method: "DELETE" });
      expect(await taken.json()).toEqual({
        user: "dana",
        organization: "acme",
        environment: "acme-prod",
        revokedTokens: 1,
      });
      await eventually(async () => (await t.fetch("acme-prod", "/actions", { token: dana })).status === 401);
      await refused(await apex("/environments/acme-prod/grants/dana", { method: "DELETE" }), 404, "grant_not_found");
      // A user id with an @, encoded in the path.
      const erin = await apex(`/orgs/acme/grants/${encodeURIComponent("erin@example.com")}`, { method: "DELETE" });
      expect(await erin.json()).toEqual({
        user: "erin@example.com",
        organization: "acme",
        environment: null,
        revokedTokens: 0,
      });
    });

    test("handles: not a DNS label 400 invalid_handle, taken 409 handle_taken; bodies and cursors checked", async () => {
      await refused(await apex("/orgs", { method: "POST", json: { handle: "Not_A_Label" } }), 400, "invalid_handle");
      await refused(await apex("/orgs", { method: "POST", json: { handle: "acme" } }), 409, "handle_taken");
      const env = (handle: string, organization = "acme") =>
        apex("/environments", { method: "POST", json: { handle, organization } });
      await refused(await env("x".repeat(64)), 400, "invalid_handle");
      await refused(await env("-acme"), 400, "invalid_handle");
      // Environments' handles are unique across the service, whatever their organization.
      await refused(await env("beta-prod"), 409, "handle_taken");
      await refused(await env("acme-new", "nowhere"), 404, "organization_not_found");
      await refused(
        await apex("/environments", { method: "POST", json: { handle: "acme-x" } }),
        400,
        "invalid_request",
      );
      await refused(
        await apex("/environments", { method: "POST", json: { handle: "acme-x", organization: "acme", extra: 1 } }),
        400,
        "invalid_request",
      );
      await refused(
        await apex("/environments", {
          method: "POST",
          body: "{not json",
          headers: { "content-type": "application/json" },
        }),
        400,
        "invalid_request",
      );
      await refused(await apex("/environments/nowhere"), 404, "environment_not_found");
      await refused(await apex("/orgs/nowhere"), 404, "organization_not_found");
      await refused(await apex("/environments?cursor=bm90LW9uZQ"), 400, "invalid_request");
      await refused(await apex("/environments?limit=0"), 400, "invalid_request");
      await refused(await apex("/nothing-here"), 404, "not_found");
    });

    test("lists are paginated like the environment API's: items and nextCursor, every row once", async () => {
      await apex("/orgs", { method: "POST", json: { handle: "paged" } });
      for (const n of [3, 1, 5, 2, 4]) {
        expect(
          (await apex("/environments", { method: "POST", json: { handle: `paged-${n}`, organization: "paged" } }))
            .status,
        ).toBe(201);
      }
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = `/environments?organization=paged&limit=2${cursor ? `&cursor=${cursor}` : ""}`;
        const page = (await (await apex(query)).json()) as { items: { handle: string }[]; nextCursor: string | null };
        expect(page.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.items.map((i) => i.handle));
        cursor = page.nextCursor;
        pages++;
      } while (cursor);
      expect(seen).toEqual(["paged-1", "paged-2", "paged-3", "paged-4", "paged-5"]);
      expect(pages).toBe(3);
    });

    test("DELETE /environments/{handle}: without confirm=true it says what it would remove; with it, rows and file bytes go", async () => {
      await t.create({ handle: "acme-doomed", organization: "acme" });
      await t.publish("acme-doomed", fixture("basic"));
      const key = await t.key({ environment: "acme-doomed" });
      const uploaded = await t.fetch("acme-doomed", "/storage/upload", {
        method: "PUT",
        headers: { path: "reports/doomed.txt", "content-type": "text/plain" },
        body: "bytes of a doomed environment",
      });
      expect(uploaded.status).toBe(200);
      expect((await t.invoke("acme-doomed", "test.echo", { text: "x" }, { token: key })).status).toBe(200);
      const id = await t.id("acme-doomed");
      const filesDir = join(t.dataDir, "files");
      expect(filesUnder(filesDir).filter((p) => p.startsWith(`environments/${id}/`))).not.toEqual([]);

      const asked = await apex("/environments/acme-doomed", { method: "DELETE" });
      expect(asked.status).toBe(409);
      const refusal = await asked.json();
      expect(refusal).toMatchObject({ ok: false, error: "confirmation_required" });
      expect(refusal.wouldRemove).toMatchObject({ releases: 1, files: 1, executions: 1, scopedKeys: 1 });
      expect((await apex("/environments/acme-doomed")).status).toBe(200);

      const deleted = await apex("/environments/acme-doomed?confirm=true", { method: "DELETE", token: tokens.org });
      expect(deleted.status).toBe(200);
      expect(await deleted.json()).toMatchObject({
        handle: "acme-doomed",
        deleted: true,
        removed: { releases: 1, files: 1, executions: 1, scopedKeys: 1 },
      });
      await refused(await apex("/environments/acme-doomed"), 404, "environment_not_found");
      expect(filesUnder(filesDir).filter((p) => p.startsWith(`environments/${id}/`))).toEqual([]);
      // An instance that never served it knows it no more; its key is refused everywhere.
      const other = await t.another();
      await refused(await other.fetch("acme-doomed", "/actions"), 404, "environment_not_found");
      await refused(await apex("/environments", { token: key }), 401, "unauthorized");
      // Environment 1 (HANDLE, single mode's database) is what every start names: never deleted.
      await refused(await apex("/environments/main?confirm=true", { method: "DELETE" }), 403, "access_denied");
      expect((await apex("/environments/main")).status).toBe(200);
    }, 60_000);

    test("the delete ends the environment's work on this instance first (the evict hook), then removes it", async () => {
      const id = await t.create({ handle: "acme-evicted", organization: "acme" });
      const evicted: [number, boolean][] = [];
      const ops = new ControlOperations({
        store: t.store,
        storage: new DiskStorage(join(t.dataDir, "files")),
        environmentUrl: t.at,
        evict: async (evicting) => {
          // Called while the environment still exists.
          evicted.push([evicting, (await t.store.control.environments.byId(evicting)) !== null]);
        },
      });
      const operator: ControlCaller = { kind: "operator" };
      await expect(ops.deleteEnvironment(operator, "acme-evicted", false)).rejects.toMatchObject({
        code: "confirmation_required",
      });
      expect(evicted).toEqual([]);
      await ops.deleteEnvironment(operator, "acme-evicted", true);
      expect(evicted).toEqual([[id, true]]);
      expect(await t.store.control.environments.byId(id)).toBeNull();
    });

    test("GET /openapi.json on the apex: a valid document of every control route", async () => {
      const doc = await (await apex("/openapi.json")).json();
      await SwaggerParser.validate(structuredClone(doc));
      expect(doc.servers).toEqual([{ url: t.serviceUrl }]);
      // The document itself aside.
      const routes = controlRoutes({
        store: t.store,
        storage: new DiskStorage(join(t.dataDir, "files")),
        environmentUrl: t.at,
        auth: new Authenticator(t.store, [], 0),
        serviceUrl: () => t.serviceUrl,
      }).routes.filter((route) => route.path !== "/openapi.json");
      expect(routes.length).toBeGreaterThan(15);
      const missing = routes
        .map((route) => [route.method, route.path.replace(/:(\w+)/g, "{$1}")] as const)
        .filter(([method, path]) => doc.paths[path]?.[method.toLowerCase()] === undefined);
      expect(missing).toEqual([]);
      // And nothing documented that the apex does not answer.
      const answered = new Set(routes.map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, "{$1}")}`));
      const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
        Object.keys(item as object).map((method) => `${method.toUpperCase()} ${path}`),
      );
      expect(documented.filter((route) => !answered.has(route))).toEqual([]);
    });
  });
}
