import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createUserToken } from "../../src/auth/tokens.ts";
import { type Config, loadConfig } from "../../src/config.ts";
import type { PollBackoff } from "../../src/engine/follow.ts";
import { bundlesDir, type ServingSingle, servingSingle, startServer } from "../../src/main.ts";
import { publishRelease } from "../../src/release/publish.ts";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import type { Dialect, TestDatabase } from "./databases.ts";

/** A Response whose JSON body tests inspect freely: its shape is what they assert. */
// biome-ignore lint/suspicious/noExplicitAny: see above
export type TestResponse = Omit<Response, "json"> & { json(): Promise<any> };

export const fixture = (name: string) => join(import.meta.dir, "..", "fixtures", "releases", name);

export interface TestServer {
  url: string;
  serviceKey: string;
  config: Config;
  store: Store;
  server: ServingSingle;
  /** Stops the server (its shutdown runs) and starts another on the same database and data folder; `url` changes. */
  restart(): Promise<void>;
  /** Publishes a release folder into the server's database, as the CLI would. */
  publish(dir: string, version?: string): ReturnType<typeof publishRelease>;
  userToken(userId: string): Promise<string>;
  /** Every request a test sends goes through here: real HTTP against the listening server. */
  fetch(path: string, init?: RequestInit & { token?: string | null }): Promise<TestResponse>;
  invoke(
    action: string,
    input: unknown,
    options?: { requestId?: string; token?: string | null },
  ): Promise<TestResponse>;
  stop(): Promise<void>;
}

export async function startTestServer(
  dialect: Dialect,
  options: {
    release?: string;
    env?: Record<string, string>;
    insecureNoAuth?: boolean;
    /** Receives the server's log lines (dropped otherwise). */
    log?: (message: string) => void;
    /** The engine's clock, kept across restarts (default: Date.now). */
    now?: () => number;
  } = {},
): Promise<TestServer> {
  const database: TestDatabase = await dialect.create();
  const dataDir = mkdtempSync(join(tmpdir(), "actuate-data-"));
  const serviceKey = `test-service-key-${crypto.randomUUID()}`;
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    DATABASE_URL: database.url,
    SERVICE_KEYS: serviceKey,
    RELEASE_POLL_MS: "50",
    ...options.env,
  });
  const store = await openStore(config.databaseUrl);
  const publish = (dir: string, version?: string) =>
    publishRelease({ store, bundlesDir: bundlesDir(config), dir, version, whenTaken: "refuse" });
  if (options.release !== undefined) await publish(options.release);
  const start = async () =>
    servingSingle(
      await startServer(config, {
        store,
        log: options.log ?? (() => {}),
        insecureNoAuth: options.insecureNoAuth,
        now: options.now,
      }),
    );
  let server = await start();

  const fetchServer = (path: string, init: RequestInit & { token?: string | null } = {}): Promise<TestResponse> => {
    const headers = new Headers(init.headers);
    const token = init.token === undefined ? serviceKey : init.token;
    if (token !== null) headers.set("authorization", `Bearer ${token}`);
    return fetch(`${server.url}${path}`, { ...init, headers });
  };

  const handle: TestServer = {
    url: server.url,
    serviceKey,
    config,
    store,
    server,
    async restart() {
      await server.stop();
      server = await start();
      handle.server = server;
      handle.url = server.url;
    },
    publish,
    userToken: async (userId) => (await createUserToken(store, userId)).token,
    fetch: fetchServer,
    invoke: (action, input, { requestId = crypto.randomUUID(), token } = {}) =>
      fetchServer(`/actions/${action}/invoke`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ requestId, input }),
        token,
      }),
    async stop() {
      await server.stop();
      await store.close();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return handle;
}

/** Resolves once `check` returns a truthy value; for state that another process or a timer changes. */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await Bun.sleep(10);
  }
}

/**
 * A second server process's worth of server on `a`'s database (its own store, data folder and port):
 * another instance, as far as the database and the other server can tell.
 */
export async function startPeer(a: TestServer, env: Record<string, string> = {}, followPoll?: PollBackoff) {
  const config = loadConfig({
    PORT: "0",
    DATA_DIR: mkdtempSync(join(tmpdir(), "actuate-b-")),
    DATABASE_URL: a.config.databaseUrl,
    SERVICE_KEYS: a.serviceKey,
    ...env,
  });
  const store = await openStore(config.databaseUrl);
  const server = await startServer(config, { store, log: () => {}, followPoll });
  return {
    url: server.url,
    server,
    async stop() {
      await server.stop();
      await store.close();
    },
  };
}
