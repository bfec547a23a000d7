import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createScopedKey } from "../../src/auth/scoped-keys.ts";
import { createUserToken } from "../../src/auth/tokens.ts";
import { type Config, loadConfig } from "../../src/config.ts";
import { bundlesDir, type RunningServer, startServer } from "../../src/main.ts";
import { publishRelease } from "../../src/release/publish.ts";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import type { Dialect, TestDatabase } from "./databases.ts";
import type { TestResponse } from "./server.ts";

/** A port free now, so SERVICE_URL can name the one the server will listen on. */
export function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port as number;
  probe.stop(true);
  return port;
}

export interface HostedEnvironment {
  handle: string;
  /** Its organization's handle (made when first named); omit for environment 1 (named HANDLE, no organization). */
  organization?: string;
  /** A release folder published into it before the server starts. */
  release?: string;
}

export interface HostingServer {
  /** SERVICE_URL: `http://actuate.localhost:<port>`. */
  serviceUrl: string;
  port: number;
  /** An operator key (SERVICE_KEYS). */
  serviceKey: string;
  config: Config;
  store: Store;
  server: RunningServer;
  dataDir: string;
  /** An environment's URL (`http://<handle>.actuate.localhost:<port>`), or the apex's for null. */
  at(handle: string | null): string;
  /** An environment's store id, by handle. */
  id(handle: string): Promise<number>;
  /** Makes an environment (and its organization when new), as `actuate env create` does. */
  create(environment: HostedEnvironment): Promise<number>;
  /** Publishes a release folder into an environment's rows, as the CLI would. */
  publish(handle: string, dir: string, version?: string): ReturnType<typeof publishRelease>;
  /** A stored key (`act_e_…` / `act_o_…`) for an environment or an organization. */
  key(scope: { environment: string } | { organization: string }): Promise<string>;
  /**
   * A user token of one environment, for a person granted it (as `env grant` does) unless `grant: false`:
   * hosting mode refuses a person without a grant in an organization's environment.
   */
  userToken(handle: string, userId: string, options?: { grant?: boolean }): Promise<string>;
  /** Real HTTP to `<handle>.<apex>` (null: the apex); the operator key unless `token` says otherwise. */
  fetch(handle: string | null, path: string, init?: RequestInit & { token?: string | null }): Promise<TestResponse>;
  invoke(
    handle: string,
    action: string,
    input: unknown,
    options?: { requestId?: string; token?: string | null },
  ): Promise<TestResponse>;
  /** Another instance on the same database and data folder (its own port and env overrides). */
  another(env?: Record<string, string>): Promise<HostingServer>;
  stop(): Promise<void>;
}

/**
 * A server in hosting mode (SERVICE_URL on `*.localhost`, which resolves to loopback, so the hosts are
 * real) over a fresh database, with the environments named made through `store.control` as the CLI makes them.
 */
export async function startHostingServer(
  dialect: Dialect,
  options: {
    environments?: HostedEnvironment[];
    /** Environment 1's handle (HANDLE); default `main`. */
    handle?: string;
    env?: Record<string, string>;
    log?: (message: string) => void;
  } = {},
): Promise<HostingServer> {
  const database: TestDatabase = await dialect.create();
  const dataDir = mkdtempSync(join(tmpdir(), "actuate-hosting-"));
  const serviceKey = `test-service-key-${crypto.randomUUID()}`;
  const store = await openStore(database.url);
  const configFor = (port: number, env: Record<string, string> = {}) =>
    loadConfig({
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      DATABASE_URL: database.url,
      SERVICE_KEYS: serviceKey,
      RELEASE_POLL_MS: "50",
      HANDLE: options.handle ?? "main",
      SERVICE_URL: `http://actuate.localhost:${port}`,
      ...options.env,
      ...env,
    });
  const publish = async (handle: string, dir: string, version?: string) =>
    publishRelease({
      store: store.environment(await id(handle)),
      bundlesDir: join(dataDir, "bundles"),
      dir,
      version,
      whenTaken: "refuse",
    });
  const id = async (handle: string) => {
    if (handle === (options.handle ?? "main")) return 1;
    const row = await store.control.environments.byHandle(handle);
    if (!row) throw new Error(`no environment ${handle}`);
    return row.id;
  };
  const create = async ({ handle, organization }: HostedEnvironment) => {
    if (organization === undefined) return 1;
    const { organizations, environments } = store.control;
    const org = (await organizations.byHandle(organization)) ?? (await organizations.create(organization, Date.now()));
    return (await environments.create(handle, org.id, Date.now())).id;
  };
  for (const environment of options.environments ?? []) {
    await create(environment);
    if (environment.release !== undefined) await publish(environment.handle, environment.release);
  }

  const instance = async (env: Record<string, string> = {}, owner: boolean): Promise<HostingServer> => {
    const port = freePort();
    const config = configFor(port, env);
    const server = await startServer(config, { store, log: options.log ?? (() => {}) });
    const at = (handle: string | null) => `http://${handle === null ? "" : `${handle}.`}actuate.localhost:${port}`;
    const fetchAt = (handle: string | null, path: string, init: RequestInit & { token?: string | null } = {}) => {
      const headers = new Headers(init.headers);
      const token = init.token === undefined ? serviceKey : init.token;
      if (token !== null) headers.set("authorization", `Bearer ${token}`);
      return fetch(`${at(handle)}${path}`, { ...init, headers }) as Promise<TestResponse>;
    };
    const others: HostingServer[] = [];
    return {
      serviceUrl: at(null),
      port,
      serviceKey,
      config,
      store,
      server,
      dataDir,
      at,
      id,
      create,
      publish,
      async key(scope) {
        const target =
          "environment" in scope
            ? { environment: await id(scope.environment) }
            : { organization: (await store.control.organizations.byHandle(scope.organization))?.id as number };
        return (await createScopedKey(store, target, Date.now())).key;
      },
      async userToken(handle, userId, { grant = true } = {}) {
        const environment = await id(handle);
        if (grant && environment !== 1) await store.control.grants.grant(userId, { environment }, Date.now());
        return (await createUserToken(store.environment(environment), userId)).token;
      },
      fetch: fetchAt,
      invoke: (handle, action, input, { requestId = crypto.randomUUID(), token } = {}) =>
        fetchAt(handle, `/actions/${action}/invoke`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ requestId, input }),
          token,
        }),
      async another(more = {}) {
        const other = await instance(more, false);
        others.push(other);
        return other;
      },
      async stop() {
        for (const other of others) await other.stop();
        await server.stop();
        if (!owner) return;
        await store.close();
        await database.drop();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  };
  return instance({}, true);
}

export { bundlesDir };
