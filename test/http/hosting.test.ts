import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createScopedKey } from "../../src/auth/scoped-keys.ts";
import { loadConfig } from "../../src/config.ts";
import { bundlesDir, type RunningServer, startServer } from "../../src/main.ts";
import { publishRelease } from "../../src/release/publish.ts";
import { StartupError } from "../../src/startup.ts";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";
import { eventually, fixture, type TestResponse } from "../support/server.ts";

// Issue #41 §1, §5: with SERVICE_URL the request's host picks the environment; SERVE_ENVIRONMENTS
// picks the ones an instance serves (here: `main`, `acme-*` and the organization `beta`'s). `*.localhost` resolves to loopback, so the hosts are real.

/** A port free now, so SERVICE_URL can name the one the server will listen on. */
function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port as number;
  probe.stop(true);
  return port;
}

for (const dialect of dialects) {
  describe(`hosting mode (${dialect.name})`, () => {
    let database: TestDatabase;
    let dataDir: string;
    let store: Store;
    let port: number;
    let server: RunningServer;
    const key = `test-service-key-${crypto.randomUUID()}`;
    const servers: RunningServer[] = [];
    const at = (handle: string | null) => `http://${handle === null ? "" : `${handle}.`}actuate.localhost:${port}`;
    const send = (url: string, init: RequestInit = {}): Promise<TestResponse> =>
      fetch(url, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) } });
    const get = (url: string, headers: Record<string, string> = {}) => send(url, { headers });

    const start = (env: Record<string, string> = {}) => {
      const config = loadConfig({
        PORT: String(port),
        HOST: "127.0.0.1",
        DATA_DIR: dataDir,
        DATABASE_URL: database.url,
        SERVICE_KEYS: key,
        RELEASE_POLL_MS: "50",
        HANDLE: "main",
        SERVICE_URL: `http://actuate.localhost:${port}`,
        SERVE_ENVIRONMENTS: "main,acme-*,org:beta",
        ...env,
      });
      return startServer(config, { store, log: () => {} });
    };

    beforeAll(async () => {
      database = await dialect.create();
      dataDir = mkdtempSync(join(tmpdir(), "actuate-hosting-"));
      store = await openStore(database.url);
      // Made through the control store, as `actuate org create` / `env create` make them.
      const { organizations, environments } = store.control;
      const environment = async (handle: string, organization: string) =>
        environments.create(handle, (await organizations.create(organization, 0)).id, 0);
      const acme = await environment("acme-one", "acme");
      await environment("other", "others");
      await environment("shop", "beta");
      const publish = (on: Store, release: string) =>
        publishRelease({ store: on, bundlesDir: join(dataDir, "bundles"), dir: fixture(release), whenTaken: "refuse" });
      await publish(store, "basic");
      await publish(store.environment(acme.id), "basic-v2");
      port = freePort();
      server = await start();
      servers.push(server);
    });
    afterAll(async () => {
      for (const running of servers) await running.stop();
      await store?.close();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    test("the bundles of every environment are under one DATA_DIR", () => {
      expect(bundlesDir(loadConfig({ DATA_DIR: dataDir }))).toBe(join(dataDir, "bundles"));
    });

    test("<handle>.<apex> reaches that environment: its release's actions, its invoke, its URL", async () => {
      const acme = await get(`${at("acme-one")}/actions`);
      expect(acme.status).toBe(200);
      const names = (await acme.json()).items.map((action: { name: string }) => action.name).sort();
      expect(names).toEqual(["test.added", "test.version"]);

      const invoked = await send(`${at("acme-one")}/actions/test.version/invoke`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ requestId: crypto.randomUUID(), input: {} }),
      });
      expect(invoked.status).toBe(200);
      const answer = await invoked.json();
      expect(answer.execution.output).toEqual({ release: "t2" });
      expect(answer.statusUrl).toBe(`${at("acme-one")}/executions/${answer.execution.id}`);
      const followed = await get(answer.statusUrl);
      expect(followed.status).toBe(200);
      expect((await followed.json()).id).toBe(answer.execution.id);
    });

    test("a signed storage URL is the environment's own", async () => {
      const signed = await send(`${at("acme-one")}/storage/signed-upload-url`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ path: "notes/a.txt", contentType: "text/plain" }),
      });
      expect(signed.status).toBe(200);
      expect((await signed.json()).url).toStartWith(`${at("acme-one")}/storage/signed/`);
    });

    test("environment 1 (the single-mode database) is served as HANDLE, with its own release", async () => {
      const main = await get(`${at("main")}/actions`);
      expect(main.status).toBe(200);
      const names = (await main.json()).items.map((action: { name: string }) => action.name);
      expect(names).toContain("test.echo");
      expect(names).not.toContain("test.added");
    });

    test("the protected-resource metadata names the environment's own URL", async () => {
      for (const handle of ["acme-one", "main"]) {
        const metadata = await (await get(`${at(handle)}/.well-known/oauth-protected-resource`)).json();
        expect(metadata.resource).toBe(`${at(handle)}/mcp`);
      }
    });

    test("/mcp answers as the environment: its resources are service://<handle>/…", async () => {
      const method = "resources/list";
      const answer = await send(`${at("acme-one")}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2026-07-28",
          "mcp-method": method,
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method,
          params: {
            _meta: {
              "io.modelcontextprotocol/protocolVersion": "2026-07-28",
              "io.modelcontextprotocol/clientInfo": { name: "raw", version: "0" },
              "io.modelcontextprotocol/clientCapabilities": {},
            },
          },
        }),
      });
      expect(answer.status).toBe(200);
      const { result } = await answer.json();
      expect(result.resources.map((resource: { uri: string }) => resource.uri)).toEqual(["service://acme-one/schema"]);
    });

    test("/session upgrades to a WebSocket through the shared server", async () => {
      const socket = new WebSocket(`${at("acme-one").replace("http", "ws")}/session`);
      const opened = await new Promise<boolean>((resolve) => {
        socket.onopen = () => resolve(true);
        socket.onerror = () => resolve(false);
      });
      socket.close();
      expect(opened).toBe(true);
    });

    test("an unknown handle, a name under it, a host outside the apex: 404 environment_not_found (JSON)", async () => {
      for (const url of [at("nobody"), `http://a.acme-one.actuate.localhost:${port}`, `http://127.0.0.1:${port}`]) {
        const answer = await get(`${url}/actions`);
        expect(answer.status).toBe(404);
        expect(answer.headers.get("content-type")).toContain("application/json");
        expect(await answer.json()).toMatchObject({ ok: false, error: "environment_not_found" });
      }
    });

    test("an environment SERVE_ENVIRONMENTS leaves out is 421 environment_not_served; org: rules serve by organization", async () => {
      const other = await get(`${at("other")}/actions`);
      expect(other.status).toBe(421);
      expect(await other.json()).toMatchObject({ ok: false, error: "environment_not_served" });
      // Asked again (now remembered), the same.
      expect((await get(`${at("other")}/actions`)).status).toBe(421);
      expect((await get(`${at("shop")}/healthz`)).status).toBe(200);
      expect(await (await get(`${at("shop")}/actions`)).json()).toMatchObject({ error: "no_active_release" });
    });

    test("an environment's key is administrator there only, an organization's in each of its environments; revoked, refused", async () => {
      const ids = async (handle: string) => (await store.control.environments.byHandle(handle))?.id ?? 0;
      const shop = await store.control.environments.byId(await ids("shop"));
      const envKey = await createScopedKey(store, { environment: await ids("acme-one") });
      const orgKey = await createScopedKey(store, { organization: shop?.organization ?? 0 });
      const as = (token: string) => (url: string) => fetch(url, { headers: { authorization: `Bearer ${token}` } });
      const refused = async (answer: Response) => {
        expect(answer.status).toBe(401);
        expect(answer.headers.get("www-authenticate")).toContain('error="invalid_token"');
      };

      expect((await as(envKey.key)(`${at("acme-one")}/actions`)).status).toBe(200);
      await refused(await as(envKey.key)(`${at("shop")}/actions`));
      await refused(await as(envKey.key)(`${at("main")}/actions`));
      expect(await (await as(orgKey.key)(`${at("shop")}/actions`)).json()).toMatchObject({
        error: "no_active_release",
      });
      await refused(await as(orgKey.key)(`${at("acme-one")}/actions`));

      await store.control.keys.revoke(envKey.row.id, Date.now());
      // Remembered at most TOKEN_RECHECK_MS (1 s), as every credential.
      await eventually(async () => (await as(envKey.key)(`${at("acme-one")}/actions`)).status === 401);
      const listed = await store.control.keys.list({ environment: await ids("acme-one") });
      expect(listed.find((k) => k.id === envKey.row.id)?.lastUsedAt).toBeNumber();
    });

    test("/healthz, /readyz and /metrics answer on any host; the apex has nothing else yet", async () => {
      for (const url of [at(null), at("nobody"), at("other"), `http://127.0.0.1:${port}`]) {
        expect((await get(`${url}/healthz`)).status).toBe(200);
        expect((await get(`${url}/readyz`)).status).toBe(200);
        const metrics = await get(`${url}/metrics`);
        expect(metrics.status).toBe(200);
        expect(await metrics.text()).toContain("actuate_");
      }
      const apex = await get(`${at(null)}/actions`);
      expect(apex.status).toBe(404);
      expect(await apex.json()).toMatchObject({ ok: false, error: "not_found" });
    });

    test("a HANDLE another environment has stops start-up, naming HANDLE", async () => {
      const fresh = await dialect.create();
      const freshStore = await openStore(fresh.url);
      try {
        const { organizations, environments } = freshStore.control;
        await environments.create("taken", (await organizations.create("org", 0)).id, 0);
        const config = loadConfig({
          PORT: "0",
          DATA_DIR: dataDir,
          DATABASE_URL: fresh.url,
          HANDLE: "taken",
          SERVICE_URL: "http://actuate.localhost",
        });
        const started = startServer(config, { store: freshStore, log: () => {} });
        await expect(started).rejects.toBeInstanceOf(StartupError);
        await expect(started).rejects.toMatchObject({ setting: "HANDLE", message: expect.stringContaining("taken") });
      } finally {
        await freshStore.close();
        await fresh.drop();
      }
    });

    test("X-Forwarded-Host names the environment only with TRUST_PROXY", async () => {
      const forwarded = { "x-forwarded-host": `acme-one.actuate.localhost:${port}`, "x-forwarded-proto": "http" };
      const untrusted = await get(`http://127.0.0.1:${port}/actions`, forwarded);
      expect(untrusted.status).toBe(404);

      await server.stop();
      servers.splice(servers.indexOf(server), 1);
      server = await start({ TRUST_PROXY: "true" });
      servers.push(server);
      const trusted = await get(`http://127.0.0.1:${port}/actions`, forwarded);
      expect(trusted.status).toBe(200);
      expect((await trusted.json()).items.map((action: { name: string }) => action.name)).toContain("test.added");
    });

    test("an instance that does not serve environment 1 composes nothing of it: its release is not loaded here", async () => {
      await server.stop();
      servers.splice(servers.indexOf(server), 1);
      server = await start({ SERVE_ENVIRONMENTS: "acme-*" });
      servers.push(server);
      expect(server.releases).toBeNull();
      expect(server.engine).toBeNull();
      expect(await (await get(`${at("main")}/actions`)).json()).toMatchObject({ error: "environment_not_served" });
      expect((await get(`${at("acme-one")}/actions`)).status).toBe(200);
      // The service's own site still knows the service keys.
      expect((await get(`${at(null)}/metrics`)).status).toBe(200);
      expect((await fetch(`${at(null)}/metrics`)).status).toBe(401);
    });
  });
}
