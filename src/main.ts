import { join } from "node:path";
import packageJson from "../package.json" with { type: "json" };
import { createApp } from "./app.ts";
import { serverAuth } from "./auth/server-auth.ts";
import { type Config, ConfigError, localUrl } from "./config.ts";
import { DataService } from "./data/service.ts";
import { Engine } from "./engine/engine.ts";
import type { PollBackoff } from "./engine/follow.ts";
import { ReleaseAdmin } from "./engine/releases.ts";
import { StatsReader } from "./engine/stats.ts";
import { FileService } from "./files/service.ts";
import { executionUrl, runUrl } from "./http/deps.ts";
import type { Route } from "./http/methods.ts";
import { clearSpool, spoolDirOf } from "./http/spool.ts";
import { isLoopbackHost } from "./lib/loopback.ts";
import { SessionHub } from "./live/session.ts";
import type { McpEndpoint } from "./mcp/server.ts";
import type { ToolDeps } from "./mcp/tools.ts";
import { createLog, type Log } from "./observe/log.ts";
import { registerServerGauges } from "./observe/server-gauges.ts";
import { Telemetry } from "./observe/telemetry.ts";
import { NO_TRACER, type Tracer } from "./observe/tracing.ts";
import { ReleaseRegistry } from "./release/registry.ts";
import { openConfiguredStorage, openConfiguredStore, StartupError, signingSecret } from "./startup.ts";
import type { Store } from "./store/store.ts";

export interface RunningServer {
  url: string;
  store: Store;
  releases: ReleaseRegistry;
  engine: Engine;
  /** The HTTP routes it answers, as registered (test/http/openapi.test.ts holds /openapi.json to them). */
  routes: readonly Route[];
  stop(): Promise<void>;
}

const packageVersion = packageJson.version;
/** How long a stopping server lets requests in flight finish, then handlers store how they ended. */
const DRAIN_MS = 5_000;
/** How long a stopping server gives the answers of its last handlers to be sent, once they have ended. */
const ANSWER_MS = 100;
const ANONYMOUS = { kind: "user", id: "anonymous" } as const;

export const bundlesDir = (config: Config) => join(config.dataDir, "bundles");

/**
 * The MCP endpoint, built on the first /mcp request: the MCP SDK (with zod and ajv, ~20 MiB and ~150 ms
 * to import) is not loaded by a server nobody reaches over MCP. A failed import is retried by the next request.
 */
function lazyMcpEndpoint(deps: ToolDeps, version: string): Pick<McpEndpoint, "handle"> {
  let endpoint: Promise<McpEndpoint> | null = null;
  const load = () =>
    import("./mcp/server.ts").then(
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

/** JSON lines on stdout (pretty when LOG_FORMAT says), each naming this instance. */
export const serverLog = (config: Config, instance: string): Log =>
  createLog({ level: config.log.level, format: config.log.format ?? "json" }, { instance });

/** OpenTelemetry, imported only when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
async function tracerFor(config: Config, instance: string): Promise<Tracer> {
  if (!config.otel) return NO_TRACER;
  const { otlpTracer } = await import("./observe/otel.ts");
  return otlpTracer({ ...config.otel, instance, version: packageVersion });
}

/** Start-up: config → store → active release → HTTP. */
export async function startServer(
  config: Config,
  options: {
    /** Where the server's log lines go (tests pass their own); default: stdout as LOG_FORMAT says. */
    log?: Log;
    store?: Store;
    insecureNoAuth?: boolean;
    /** How followers re-read executions nothing told them about (tests lengthen it to prove NOTIFY). */
    followPoll?: PollBackoff;
    /**
     * Bun's development server for the console (`bun run dev`): rebuilt and reloaded on change, with a
     * file watcher. Off otherwise, whatever NODE_ENV says: a start serves a production bundle and watches nothing.
     */
    development?: boolean;
    /** The engine's clock (executions, runs, schedules); tests move it. Default: Date.now. */
    now?: () => number;
  } = {},
): Promise<RunningServer> {
  if (options.insecureNoAuth && !isLoopbackHost(config.host)) {
    throw new ConfigError("--insecure-no-auth only runs bound to a loopback HOST");
  }
  const store = options.store ?? (await openConfiguredStore(config));
  const log = options.log ?? serverLog(config, store.instances.id);
  store.onTrouble((message) => log(message, { level: "warn" }));
  const telemetry = new Telemetry(await tracerFor(config, store.instances.id));
  store.onBatchRetry(({ store: writer, reason, writes, message }) => {
    telemetry.batchRetried(writer, reason);
    const what = `a batch of ${writes} writes (${writer}) failed as a whole (${reason}: ${message})`;
    log(`${what}; each was written again alone`, { level: "warn" });
  });
  const storage = await openConfiguredStorage(config);
  const spoolDir = spoolDirOf(config.dataDir);
  clearSpool(spoolDir);
  const interrupted = await store.instances.recover(Date.now());
  if (interrupted > 0)
    log(`${interrupted} execution(s) left running by a stopped server were marked failed (execution_interrupted)`, {
      level: "warn",
    });
  const releases = new ReleaseRegistry(store, bundlesDir(config), log);
  await releases.refresh();
  releases.watch(config.releasePollMs);
  const data = new DataService(store.data, config.queryLimits);
  await data.changes.relay();
  let publicUrl = config.publicUrl ?? "";
  const files = new FileService({
    store,
    storage,
    secret: config.signingSecret ?? signingSecret(config.dataDir),
    maxBytes: config.maxFileBytes,
    publicUrl: () => publicUrl,
  });
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
    followPoll: options.followPoll,
    now: options.now,
  });
  await engine.start();
  const auth = serverAuth(config, { store, publicUrl: () => publicUrl, log });

  const endpoint = lazyMcpEndpoint(
    {
      engine,
      telemetry,
      log,
      handle: config.handle,
      toolNaming: config.mcpToolNames,
      executionUrl: (id) => executionUrl(publicUrl, id),
      runUrl: (id) => runUrl(publicUrl, id),
    },
    packageVersion,
  );
  if (options.insecureNoAuth) {
    log(
      `WARNING: --insecure-no-auth: /mcp callers without a credential act as user "${ANONYMOUS.id}". Never expose this server.`,
      { level: "warn" },
    );
  }
  const hub = new SessionHub({ auth: auth.authenticator, data, engine, log, limits: config.live, telemetry });
  registerServerGauges(telemetry, {
    live: () => hub.counts(),
    activeRuns: () => store.runs.countActive(),
    pool: () => store.pool(),
    releaseVersion: () => releases.current()?.version,
    serverVersion: packageVersion,
  });
  const app = createApp({
    files,
    releases: new ReleaseAdmin({ store, bundlesDir: bundlesDir(config), refresh: () => releases.reload() }),
    stats: new StatsReader({ store, liveSockets: () => hub.counts().sockets }),
    signIns: auth.signIns,
    maxFileBytes: config.maxFileBytes,
    maxMultipartBytes: config.maxMultipartBytes,
    maxReleaseBytes: config.maxReleaseBytes,
    spoolDir,
    hub,
    engine,
    auth: auth.authenticator,
    publicUrl: () => publicUrl,
    log,
    telemetry,
    metricsToken: config.metricsToken,
    metadata: { handle: config.handle, authIssuer: config.authIssuer },
    authority: auth.authority,
    cors: config.cors,
    readiness: { database: () => store.ping(), storage: () => storage.check() },
    development: options.development ?? false,
    mcp: {
      endpoint,
      allowedOrigins: config.cors.listed,
      loopbackOnly: isLoopbackHost(config.host),
      anonymous: options.insecureNoAuth ? ANONYMOUS : undefined,
    },
  });
  try {
    app.listen({ port: config.port, hostname: config.host });
  } catch (error) {
    if ((error as { code?: string }).code !== "EADDRINUSE") throw error;
    releases.stop();
    hub.stop();
    await engine.shutdown(0, Promise.resolve());
    if (!options.store) await store.close();
    throw new StartupError(
      `${config.host}:${config.port} is in use: another server listens there (another actuate?); stop it or set PORT`,
      "PORT",
    );
  }
  const port = app.server?.port ?? config.port;
  publicUrl ||= localUrl(config.host, port);

  return {
    url: localUrl(config.host, port),
    store,
    releases,
    engine,
    routes: app.routes,
    async stop() {
      releases.stop();
      hub.stop();
      // No new connections from now on. The requests in flight get their answers: all of them if they
      // end within DRAIN_MS; else, once the handlers running here have ended, ANSWER_MS to send theirs
      // (a request that waits for something else, or a client still sending, does not hold the stop up).
      const closed = app.server?.stop(false);
      const handled = engine.idle().then(() => Bun.sleep(ANSWER_MS));
      const drained = Promise.race([closed, handled, Bun.sleep(DRAIN_MS)]);
      await engine.shutdown(DRAIN_MS, drained);
      // Then close what is left (idle keep-alive connections, live sockets, waits still running).
      await app.stop(true);
      await auth.close();
      await telemetry.tracer.shutdown().catch((error) => log(`traces not sent: ${error.message}`, { level: "warn" }));
      if (!options.store) await store.close();
    },
  };
}
