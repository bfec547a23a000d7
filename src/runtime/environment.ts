import { join } from "node:path";
import packageJson from "../../package.json" with { type: "json" };
import { type App, createApp } from "../app.ts";
import { type ServerAuth, serverAuth } from "../auth/server-auth.ts";
import type { Config } from "../config.ts";
import { DataService } from "../data/service.ts";
import { Engine } from "../engine/engine.ts";
import { liveInstances } from "../engine/fleet.ts";
import type { PollBackoff } from "../engine/follow.ts";
import { ReleaseAdmin } from "../engine/releases.ts";
import { StatsReader } from "../engine/stats.ts";
import { EnvironmentVariables } from "../engine/variables.ts";
import type { WorkflowDriver } from "../engine/workflows/worker.ts";
import { fileServiceOf } from "../files/service.ts";
import type { Storage } from "../files/storage.ts";
import { isLoopbackHost } from "../lib/loopback.ts";
import { SessionHub } from "../live/session.ts";
import type { McpEndpoint } from "../mcp/server.ts";
import type { ToolDeps } from "../mcp/tools.ts";
import { type Log, withFields } from "../observe/log.ts";
import type { Telemetry } from "../observe/telemetry.ts";
import { ReleaseRegistry } from "../release/registry.ts";
import type { Store } from "../store/store.ts";
import type { Sealer } from "../variables/sealing.ts";
import { executionUrl, runUrl } from "../wire/urls.ts";

export const packageVersion = packageJson.version;
export const ANONYMOUS = { kind: "user", id: "anonymous" } as const;

export const bundlesDir = (config: Config) => join(config.dataDir, "bundles");

/** What every environment of a process shares: made once at start-up, never per environment. */
export interface ProcessParts {
  config: Config;
  /** The process's store (any view: each environment takes its own with `store.environment(id)`). */
  store: Store;
  storage: Storage;
  /** The HMAC key of signed storage URLs. */
  secret: string;
  /** What seals and opens secrets (SECRETS_KEY, or dev's key file); null: none, a secret is refused. */
  sealer: Sealer | null;
  spoolDir: string;
  log: Log;
  telemetry: Telemetry;
  insecureNoAuth: boolean;
  followPoll?: PollBackoff;
  development: boolean;
  now?: () => number;
  /** Whether the process is stopping (its /readyz answers 503 `draining`). */
  draining?: () => boolean;
}

/** Which environment a runtime serves, and where its callers reach it. */
export interface EnvironmentSite {
  /** The store's key of the environment (1: single mode's). */
  id: number;
  /** Its name in MCP resource URIs (`service://<handle>/schema`) and the metadata. */
  handle: string;
  /** Its public URL, no trailing slash (read on use: single mode knows it once listening). */
  publicUrl: () => string;
}

/** One environment's pieces, composed over the process's parts. */
export interface EnvironmentRuntime {
  site: EnvironmentSite;
  store: Store;
  releases: ReleaseRegistry;
  engine: Engine;
  hub: SessionHub;
  auth: ServerAuth;
  /** Its Elysia app: single mode listens with it; hosting mode hands it requests (`app.fetch`). */
  app: App;
  /** Stops what polls or pushes on its own (release polling, live sockets' refreshes); requests still run. */
  halt(): void;
}

/**
 * The MCP endpoint, built on the first /mcp request: the MCP SDK (with zod and ajv, ~20 MiB and ~150 ms
 * to import) is not loaded by a server nobody reaches over MCP. A failed import is retried by the next request.
 */
function lazyMcpEndpoint(deps: ToolDeps, version: string): Pick<McpEndpoint, "handle"> {
  let endpoint: Promise<McpEndpoint> | null = null;
  const load = () =>
    import("../mcp/server.ts").then(
      ({ McpEndpoint }) => new McpEndpoint(deps, version),
      (error) => {
        endpoint = null;
        throw error;
      },
    );
  return {
    async handle(...call) {
      endpoint ??= load();
      return (await endpoint).handle(...call);
    },
  };
}

/**
 * One environment: its active release (polled), data, files, engine (started: its loops run from here
 * on), credentials, live hub, MCP endpoint and app, over the environment's view of the store. Single
 * mode makes one, for environment 1; hosting mode one per environment, on its first request.
 */
export async function composeEnvironment(
  parts: ProcessParts,
  site: EnvironmentSite,
  /**
   * Hosting mode: the process's service loops (runtime/service-loops.ts) poll for every environment, so
   * this one's engine is driven by them and its release is reloaded by their poll, not its own.
   */
  driver?: WorkflowDriver,
): Promise<EnvironmentRuntime> {
  const { config, storage } = parts;
  // Hosting mode: its log lines name it (`environment`), its execution counters and spans too.
  const log = config.hosting ? withFields(parts.log, { environment: site.handle }) : parts.log;
  const telemetry = parts.telemetry.forEnvironment(site.handle);
  const store = parts.store.environment(site.id);
  const releases = new ReleaseRegistry(store, bundlesDir(config), log);
  // Read again on every revision (a variable set anywhere bumps it), before the release is served.
  const variables = new EnvironmentVariables({ store, sealer: parts.sealer, log });
  releases.follow((release) => variables.refresh(release));
  await releases.refresh();
  const data = new DataService(store.data, config.queryLimits);
  await data.changes.relay();
  const files = fileServiceOf(
    { store, storage, secret: parts.secret, maxBytes: config.maxFileBytes },
    site.id,
    site.publicUrl,
  );
  const engine = new Engine({
    store,
    data,
    files,
    release: () => releases.current(),
    releaseVersion: (version) => releases.version(version),
    workflows: config.workflows,
    waitMs: config.waitMs,
    logLimits: config.executionLogs,
    maxOutputBytes: config.maxOutputBytes,
    retention: config.executionRetentionMs === null ? undefined : { keepMs: config.executionRetentionMs },
    log,
    telemetry,
    followPoll: parts.followPoll,
    now: parts.now,
    loops: driver,
    variables: () => variables.snapshot(),
    variableAdmin: { sealer: parts.sealer, changed: () => releases.reload() },
  });
  await engine.start();
  // Polled from here on: an environment whose start failed above (hosting mode tries it again on its next
  // request) leaves no timer behind.
  if (!driver) releases.watch(config.releasePollMs);
  const auth = serverAuth({ ...config, handle: site.handle }, { store, publicUrl: site.publicUrl, log });

  const endpoint = lazyMcpEndpoint(
    {
      engine,
      telemetry,
      log,
      handle: site.handle,
      toolNaming: config.mcpToolNames,
      executionUrl: (id) => executionUrl(site.publicUrl(), id),
      runUrl: (id) => runUrl(site.publicUrl(), id),
    },
    packageVersion,
  );
  const hub = new SessionHub({
    ...{ auth: auth.authenticator, data, engine, log, limits: config.live, telemetry },
    publicUrl: site.publicUrl,
  });
  const app = createApp({
    files,
    releases: new ReleaseAdmin({ store, bundlesDir: bundlesDir(config), refresh: () => releases.reload() }),
    stats: new StatsReader({ store, liveSockets: () => hub.counts().sockets }),
    signIns: auth.signIns,
    maxFileBytes: config.maxFileBytes,
    maxMultipartBytes: config.maxMultipartBytes,
    maxReleaseBytes: config.maxReleaseBytes,
    spoolDir: parts.spoolDir,
    hub,
    engine,
    auth: auth.authenticator,
    publicUrl: site.publicUrl,
    log,
    telemetry,
    metricsToken: config.metricsToken,
    metadata: { handle: site.handle, authIssuer: config.authIssuer, serviceAuthority: auth.serviceAuthority },
    authority: auth.authority,
    cors: config.cors,
    readiness: { database: () => store.ping(), storage: () => storage.check(), draining: parts.draining },
    development: parts.development,
    fleet: {
      instance: store.instances.id,
      // Hosting mode: the fleet is the operator's, listed on the apex (http/control.ts).
      list: config.hosting ? null : () => liveInstances(store),
    },
    mcp: {
      endpoint,
      allowedOrigins: config.cors.listed,
      loopbackOnly: isLoopbackHost(config.host),
      anonymous: parts.insecureNoAuth ? ANONYMOUS : undefined,
    },
  });
  return {
    site,
    store,
    releases,
    engine,
    hub,
    auth,
    app,
    halt() {
      releases.stop();
      hub.stop();
    },
  };
}
