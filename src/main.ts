import { type Config, ConfigError, localUrl } from "./config.ts";
import type { PollBackoff } from "./engine/follow.ts";
import { clearSpool, spoolDirOf } from "./http/spool.ts";
import { isLoopbackHost } from "./lib/loopback.ts";
import { createLog, type Log } from "./observe/log.ts";
import { registerServerGauges } from "./observe/server-gauges.ts";
import { Telemetry } from "./observe/telemetry.ts";
import { NO_TRACER, type Tracer } from "./observe/tracing.ts";
import { ANONYMOUS, composeEnvironment, type ProcessParts, packageVersion } from "./runtime/environment.ts";
import { startHosting } from "./runtime/hosting.ts";
import { ANSWER_MS, type RunningServer, SIGNAL_GRACE_MS, waitUnlessHurried } from "./runtime/running.ts";
import { openConfiguredStorage, openConfiguredStore, StartupError, secretsSealer, signingSecret } from "./startup.ts";
import type { Store } from "./store/store.ts";
import type { Sealer } from "./variables/sealing.ts";

export { bundlesDir } from "./runtime/environment.ts";

export { type RunningServer, type ServingSingle, servingSingle } from "./runtime/running.ts";

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
    /** How followers re-read executions nothing told them about; default FOLLOW_POLL_MS (tests lengthen it to prove NOTIFY). */
    followPoll?: PollBackoff;
    /**
     * Bun's development server for the console (`bun run dev`): rebuilt and reloaded on change, with a
     * file watcher. Off otherwise, whatever NODE_ENV says: a start serves a production bundle and watches nothing.
     */
    development?: boolean;
    /** The engine's clock (executions, runs, schedules); tests move it. Default: Date.now. */
    now?: () => number;
    /** What seals secrets (`start` decides it); default: SECRETS_KEY, else a key file in DATA_DIR. */
    sealer?: Sealer | null;
  } = {},
): Promise<RunningServer> {
  if (options.insecureNoAuth && !isLoopbackHost(config.host)) {
    throw new ConfigError("--insecure-no-auth only runs bound to a loopback HOST");
  }
  const store = options.store ?? (await openConfiguredStore(config));
  const log = options.log ?? serverLog(config, store.instances.id);
  store.onTrouble((message) => log(message, { level: "warn" }));
  const telemetry = new Telemetry(await tracerFor(config, store.instances.id), {
    environments: config.hosting !== undefined,
  });
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
  let draining = false;
  const parts: ProcessParts = {
    config,
    store,
    storage,
    secret: config.signingSecret ?? signingSecret(config.dataDir),
    sealer: options.sealer !== undefined ? options.sealer : await secretsSealer(config, { keyFile: true }),
    spoolDir,
    log,
    telemetry,
    insecureNoAuth: options.insecureNoAuth ?? false,
    followPoll: options.followPoll ?? config.followPoll,
    development: options.development ?? false,
    now: options.now,
    draining: () => draining,
  };
  if (options.insecureNoAuth) {
    log(
      `WARNING: --insecure-no-auth: /mcp callers without a credential act as user "${ANONYMOUS.id}". Never expose this server.`,
      { level: "warn" },
    );
  }
  if (config.hosting) {
    return startHosting(parts, config.hosting, { ownsStore: !options.store });
  }
  let publicUrl = config.publicUrl ?? "";
  const { releases, engine, hub, auth, app, halt } = await composeEnvironment(parts, {
    id: 1,
    handle: config.handle,
    publicUrl: () => publicUrl,
  });
  registerServerGauges(telemetry, {
    live: () => hub.counts(),
    activeRuns: () => store.runs.countActive(),
    pool: () => store.pool(),
    liveInstances: async () => (await store.instances.live(Date.now())).length,
    releaseVersion: () => releases.current()?.version,
    serverVersion: packageVersion,
  });
  try {
    app.listen({ port: config.port, hostname: config.host });
  } catch (error) {
    if ((error as { code?: string }).code !== "EADDRINUSE") throw error;
    halt();
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
    async stop({ readyDrainMs = 0, hurry } = {}) {
      // The ready drain: /readyz says so while everything is served as usual (see StopOptions).
      draining = true;
      await waitUnlessHurried(readyDrainMs, hurry);
      halt();
      // No new connections from now on. The requests in flight get their answers: all of them if they
      // end within DRAIN_MS; else, once the handlers running here have ended, ANSWER_MS to send theirs
      // (a request that waits for something else, or a client still sending, does not hold the stop up).
      const closed = app.server?.stop(false);
      const handled = engine.idle().then(() => Bun.sleep(ANSWER_MS));
      const drained = Promise.race([closed, handled, waitUnlessHurried(config.drainMs, hurry)]);
      await engine.shutdown(SIGNAL_GRACE_MS, drained);
      // Then close what is left (idle keep-alive connections, live sockets, waits still running).
      await app.stop(true);
      await auth.close();
      await telemetry.tracer.shutdown().catch((error) => log(`traces not sent: ${error.message}`, { level: "warn" }));
      if (!options.store) await store.close();
    },
  };
}
