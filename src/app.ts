import { Elysia } from "elysia";
import type { SignIns } from "./auth/sign-ins.ts";
import type { CorsOrigins } from "./config.ts";
import type { ReleaseAdmin } from "./engine/releases.ts";
import type { StatsReader } from "./engine/stats.ts";
import type { FileService } from "./files/service.ts";
import { actionRoutes } from "./http/actions.ts";
import { consoleRedirect, consoleServeRoutes } from "./http/console.ts";
import { cors } from "./http/cors.ts";
import type { HttpDeps } from "./http/deps.ts";
import { errorHandling } from "./http/errors.ts";
import { executionRoutes } from "./http/executions.ts";
import { healthRoutes, type ReadinessChecks } from "./http/health.ts";
import { type FleetDeps, INSTANCE_HEADER, instanceRoutes } from "./http/instances.ts";
import { IDLE_TIMEOUT_SECONDS } from "./http/long-wait.ts";
import { type McpRouteOptions, mcpRoutes } from "./http/mcp.ts";
import type { Route } from "./http/methods.ts";
import { metricsRoutes } from "./http/metrics.ts";
import { type OAuthRouteOptions, oauthRoutes } from "./http/oauth.ts";
import { observeRequests } from "./http/observe.ts";
import { describeRoutes } from "./http/openapi.ts";
import { queryRoutes } from "./http/query.ts";
import { releaseRoutes } from "./http/releases.ts";
import { runRoutes } from "./http/runs.ts";
import { scheduleRoutes } from "./http/schedules.ts";
import { sessionRoutes } from "./http/session.ts";
import { signInRoutes } from "./http/sign-ins.ts";
import { statsRoutes } from "./http/stats.ts";
import { storageRoutes } from "./http/storage.ts";
import { variableRoutes } from "./http/variables.ts";
import { type ResourceMetadataOptions, wellKnownRoutes } from "./http/well-known.ts";
import type { SessionHub } from "./live/session.ts";
import type { Telemetry } from "./observe/telemetry.ts";

// Bun's own limit answers an empty 413 before any hook runs; keep it far above every per-endpoint
// limit, which the endpoints enforce themselves with a JSON 413 (see http/body.ts).
export const HARD_BODY_LIMIT = 1024 * 1024 * 1024;

export interface AppDeps extends HttpDeps {
  /** Bun's development server for the console (rebuild on change, a file watcher): `bun run dev` only. */
  development: boolean;
  files: FileService;
  maxFileBytes: number;
  maxMultipartBytes: number;
  maxReleaseBytes: number;
  /** Where multipart invocations spool their file parts (emptied at start-up). */
  spoolDir: string;
  hub: SessionHub;
  releases: ReleaseAdmin;
  stats: StatsReader;
  /** The built-in authority's sign-ins (none with AUTH_ISSUER). */
  signIns: SignIns;
  mcp: Omit<McpRouteOptions, "auth" | "publicUrl">;
  metadata: Omit<ResourceMetadataOptions, "publicUrl">;
  cors: CorsOrigins;
  readiness: ReadinessChecks;
  telemetry: Telemetry;
  /** A bearer token that may read /metrics, besides the service keys. */
  metricsToken?: string;
  /** The built-in authority, when the environment is its own (no AUTH_ISSUER). */
  authority?: OAuthRouteOptions["authority"];
  /** This instance (named on every response) and the fleet's list (`GET /instances`). */
  fleet: FleetDeps;
}

export const createApp = (deps: AppDeps) => {
  const app = new Elysia({
    serve: {
      maxRequestBodySize: HARD_BODY_LIMIT,
      idleTimeout: IDLE_TIMEOUT_SECONDS,
      routes: consoleServeRoutes,
      development: deps.development,
      // Elysia turns SO_REUSEPORT on: a second server started on the same port would share it silently,
      // the kernel handing each connection to either. A port in use is an error instead.
      reusePort: false,
    },
  })
    // Default headers: set once here, copied into each response's headers Elysia makes anyway.
    .headers({ [INSTANCE_HEADER]: deps.fleet.instance })
    .use(observeRequests(deps.telemetry, deps.log))
    .use(errorHandling(deps.log, (): readonly Route[] => app.routes))
    .use(cors(deps.cors))
    .use(healthRoutes(deps.readiness))
    .use(consoleRedirect())
    .use(
      metricsRoutes({
        telemetry: deps.telemetry,
        auth: deps.auth,
        publicUrl: deps.publicUrl,
        metricsToken: deps.metricsToken,
      }),
    )
    .use(
      wellKnownRoutes({ ...deps.metadata, builtInAuthority: deps.authority !== undefined, publicUrl: deps.publicUrl }),
    )
    .use(
      deps.authority
        ? oauthRoutes({ authority: deps.authority, publicUrl: deps.publicUrl, log: deps.log })
        : new Elysia(),
    )
    .use(actionRoutes(deps))
    .use(describeRoutes({ ...deps, handle: deps.metadata.handle }))
    .use(executionRoutes(deps))
    .use(runRoutes(deps))
    .use(scheduleRoutes(deps))
    .use(releaseRoutes(deps))
    .use(statsRoutes(deps))
    .use(instanceRoutes(deps))
    .use(signInRoutes(deps))
    .use(queryRoutes(deps))
    .use(sessionRoutes({ hub: deps.hub, auth: deps.auth, publicUrl: deps.publicUrl }))
    .use(storageRoutes(deps))
    .use(variableRoutes(deps))
    .use(mcpRoutes({ ...deps.mcp, auth: deps.auth, publicUrl: deps.publicUrl }));
  return app;
};

export type App = ReturnType<typeof createApp>;
