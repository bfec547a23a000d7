import { websocket as elysiaWebSocket } from "elysia/ws";
import { HARD_BODY_LIMIT } from "../app.ts";
import { apexAuthenticator } from "../auth/server-auth.ts";
import { environmentUrl, type HostingConfig, localUrl, serviceUrlOf } from "../config.ts";
import { consoleSite } from "../hosting/console-site.ts";
import { controlDirectory } from "../hosting/control-directory.ts";
import { Dispatcher, type EnvironmentEntry, type RequestHandler } from "../hosting/dispatcher.ts";
import { nativeRoutes, type RouteLookup, routeLookup } from "../hosting/native-routes.ts";
import { serveFilter } from "../hosting/serve-filter.ts";
import { consoleServeRoutes } from "../http/console.ts";
import { errorResponse } from "../http/errors.ts";
import { IDLE_TIMEOUT_SECONDS } from "../http/long-wait.ts";
import { loggable, publicErrorOf } from "../lib/database-errors.ts";
import { PublicError } from "../lib/errors.ts";
import { registerServerGauges } from "../observe/server-gauges.ts";
import { StartupError } from "../startup.ts";
import {
  bundlesDir,
  composeEnvironment,
  type EnvironmentRuntime,
  type ProcessParts,
  packageVersion,
} from "./environment.ts";
import { ANSWER_MS, type RunningServer, SIGNAL_GRACE_MS, waitUnlessHurried } from "./running.ts";

/**
 * Hosting mode (SERVICE_URL): one Bun server for every environment, its requests routed by host through
 * the Dispatcher. Environment 1 (single mode's database, named HANDLE) is composed at start-up; every
 * other on its first request or when its due work is claimed, and kept until it is deleted. One set of
 * loops polls for every environment (ServiceLoops).
 */
export async function startHosting(
  parts: ProcessParts,
  hosting: HostingConfig,
  { ownsStore }: { ownsStore: boolean },
): Promise<RunningServer> {
  const { config, store, log, telemetry, storage } = parts;
  const { service } = hosting;
  // Hosting mode's parts, not loaded by a single-mode server (its idle memory).
  const [{ environmentEntries, HostedEnvironments }, { ServiceLoops }, { createApexApp }, { serviceAuthority }] =
    await Promise.all([
      import("./hosted-environments.ts"),
      import("./service-loops.ts"),
      import("./apex.ts"),
      import("../auth/service-authority.ts"),
    ]);
  const directory = controlDirectory(store.control);
  let server: Bun.Server<unknown> | null = null;
  const serves = serveFilter(hosting.serve);
  const entries = environmentEntries(store.control);
  let dispatcher: Dispatcher | null = null;
  // Each environment's routes as Bun's router serves them, by its app's fetch (what the Dispatcher holds).
  const routesByApp = new WeakMap<RequestHandler, RouteLookup>();
  const hosted = new HostedEnvironments({
    compose: async ({ id, handle }: EnvironmentEntry) => {
      // Made once: the invoke path reads it for every execution's URL.
      const url = environmentUrl(service, handle);
      const publicUrl = () => url;
      const runtime = await composeEnvironment(parts, { id, handle, publicUrl }, loops.driver);
      // Its routes reach the shared server through the app (a WebSocket's upgrade, a long wait's timeout),
      // read when used: the service loops compose environments with due work before the server listens.
      Object.defineProperty(runtime.app, "server", { get: () => server, configurable: true });
      routesByApp.set(runtime.app.fetch, routeLookup(runtime.app));
      return runtime;
    },
    entryOf: entries.byId,
    serves,
    forget: (handle) => dispatcher?.forget(handle),
    graceMs: SIGNAL_GRACE_MS,
  });
  const loops = new ServiceLoops(
    { store, storage, log, now: parts.now ?? Date.now, telemetry },
    {
      all: () => hosted.all(),
      runtimeOf: (id) => hosted.runtimeOf(id),
      evict: (id) => hosted.evict(id),
      served: async (row) => row.handle !== null && serves(await entries.ofRow(row)),
    },
    {
      changesMs: config.releasePollMs,
      workflows: config.workflows,
      retentionMs: config.executionRetentionMs,
      expiryMs: config.expirySweepMs,
    },
  );
  const single = await directory.nameSingle(config.handle).catch((error) => {
    if (!(error instanceof PublicError)) throw error;
    // A handle that is no DNS label, or another environment's.
    throw new StartupError(`HANDLE names environment 1 in hosting mode: ${error.message}; set another`, "HANDLE");
  });
  // This process is alive (its heartbeat) before any environment's work runs here.
  await loops.start();
  // Not composed where SERVE_ENVIRONMENTS leaves it out: its release's code and loops run only where it is served.
  const first = serves(single)
    ? await hosted.open(single).catch(async (error) => {
        await loops.halt();
        await loops.retire();
        throw error;
      })
    : null;
  let draining = false;
  const authority = config.authIssuer ? null : serviceAuthority({ store, service, log });
  const apex = createApexApp({
    auth: apexAuthenticator(config, store),
    serviceUrl: () => serviceUrlOf(service),
    readiness: { database: () => store.ping(), storage: () => storage.check(), draining: () => draining },
    telemetry,
    metricsToken: config.metricsToken,
    log,
    store,
    storage,
    environmentUrl: (handle) => environmentUrl(service, handle),
    evict: (id) => hosted.evict(id),
    bundlesDir: bundlesDir(config),
    changed: () => loops.pollChangesFresh(),
    authority: authority?.authority,
    sealer: parts.sealer,
  });
  // Outside development the console's page is asked for through the Dispatcher, whose host check it needs;
  // `bun run dev` keeps Bun's own route of it (its hot reload's socket reaches the server that built it).
  const consolePages = parts.development ? null : consoleSite(consoleServeRoutes);
  dispatcher = new Dispatcher({
    service,
    trustProxy: config.trustProxy,
    serves,
    directory,
    open: async (environment) => (await hosted.open(environment)).app.fetch,
    apex: apex.fetch,
    routesOf: (handler) => routesByApp.get(handler),
    console: consolePages?.fetch,
  });
  if (first) dispatcher.adopt(single.handle, first.app.fetch);
  registerServerGauges(telemetry, {
    live: () => sumOf(hosted.all().map((runtime) => runtime.hub.counts())),
    activeRuns: () => store.runs.countActiveAcross(),
    pool: () => store.pool(),
    liveInstances: async () => (await store.instances.live(Date.now())).length,
    // One gauge for one release: the service's environments have one each.
    releaseVersion: () => undefined,
    serverVersion: packageVersion,
  });

  const stopEnvironments = async (drained: Promise<unknown>) => {
    await loops.halt();
    const runtimes = hosted.all();
    for (const runtime of runtimes) runtime.halt();
    await Promise.all(runtimes.map((runtime) => runtime.engine.shutdown(SIGNAL_GRACE_MS, drained)));
    await loops.retire();
  };
  try {
    server = Bun.serve({
      port: config.port,
      hostname: config.host,
      maxRequestBodySize: HARD_BODY_LIMIT,
      idleTimeout: IDLE_TIMEOUT_SECONDS,
      development: parts.development,
      reusePort: false,
      // Every environment's app has the same routes: Bun's router matches them, as in single mode, and the
      // Dispatcher hands each to the compiled handler of the request's environment (its hot path). The
      // console's page is the same for every environment (it reads the API of the host it is on).
      routes: Object.assign(
        first ? nativeRoutes(first.app, (key, path) => dispatcher.routed(key, path)) : {},
        consolePages ? {} : consoleServeRoutes,
      ),
      // Elysia's handlers (its WebSocket routes upgrade with theirs in the socket's data); its own typing
      // of Bun's socket lags Bun's (binaryType "blob").
      websocket: elysiaWebSocket as unknown as Bun.WebSocketHandler<unknown>,
      fetch: dispatcher.fetch,
      // What the dispatcher threw before any app took the request (the directory's database away, a
      // runtime that failed to start): JSON like every other answer.
      error(error) {
        const refusal = publicErrorOf(error);
        if (refusal) return errorResponse(refusal.code, refusal.message, refusal.fields);
        log(`unhandled error: ${loggable(error)}`, { level: "error" });
        return errorResponse("internal_error", "the server failed to answer this request");
      },
    });
  } catch (error) {
    if ((error as { code?: string }).code !== "EADDRINUSE") throw error;
    await stopEnvironments(Promise.resolve());
    if (ownsStore) await store.close();
    throw new StartupError(
      `${config.host}:${config.port} is in use: another server listens there (another actuate?); stop it or set PORT`,
      "PORT",
    );
  }
  const listening = server;
  const one = first ? `environment ${single.handle} is ${environmentUrl(service, single.handle)}` : "";
  log(`hosting ${serviceUrlOf(service)}${one && `: ${one}`}`);

  return {
    url: localUrl(config.host, listening.port ?? config.port),
    store,
    releases: first?.releases ?? null,
    engine: first?.engine ?? null,
    routes: (first?.app ?? apex).routes,
    environments: hosted,
    serviceLoops: loops,
    async stop({ readyDrainMs = 0, hurry } = {}) {
      // As single mode's stop (main.ts), for every environment at once; /readyz answers on every host.
      draining = true;
      await waitUnlessHurried(readyDrainMs, hurry);
      const closed = listening.stop(false);
      const handled = Promise.all(hosted.all().map((runtime) => runtime.engine.idle())).then(() =>
        Bun.sleep(ANSWER_MS),
      );
      await stopEnvironments(Promise.race([closed, handled, waitUnlessHurried(config.drainMs, hurry)]));
      await listening.stop(true);
      consolePages?.stop();
      await Promise.all([...hosted.all().map((runtime) => runtime.auth.close()), authority?.close()]);
      await telemetry.tracer.shutdown().catch((error) => log(`traces not sent: ${error.message}`, { level: "warn" }));
      if (ownsStore) await store.close();
    },
  };
}

type LiveCounts = ReturnType<EnvironmentRuntime["hub"]["counts"]>;

const sumOf = (counts: LiveCounts[]): LiveCounts =>
  counts.reduce(
    (sum, count) => ({
      sockets: sum.sockets + count.sockets,
      subscriptions: sum.subscriptions + count.subscriptions,
      streams: sum.streams + count.streams,
      unsentBytes: sum.unsentBytes + count.unsentBytes,
    }),
    { sockets: 0, subscriptions: 0, streams: 0, unsentBytes: 0 },
  );
