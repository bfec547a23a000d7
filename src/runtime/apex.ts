import { Elysia } from "elysia";
import type { Authenticator } from "../auth/authenticator.ts";
import { errorHandling } from "../http/errors.ts";
import { healthRoutes, type ReadinessChecks } from "../http/health.ts";
import type { Route } from "../http/methods.ts";
import { metricsRoutes } from "../http/metrics.ts";
import { type OAuthRouteOptions, oauthRoutes } from "../http/oauth.ts";
import { observeRequests } from "../http/observe.ts";
import type { Log } from "../observe/log.ts";
import type { Telemetry } from "../observe/telemetry.ts";

export interface ApexDeps {
  /** Who may read /metrics: the service keys (and METRICS_TOKEN). */
  auth: Authenticator;
  /** The service's URL (SERVICE_URL), named in a refusal's challenge. */
  serviceUrl: () => string;
  readiness: ReadinessChecks;
  telemetry: Telemetry;
  metricsToken?: string;
  log: Log;
  /** The service's one authorization authority (auth/service-authority.ts), unless AUTH_ISSUER is the authority. */
  authority?: OAuthRouteOptions["authority"];
}

/**
 * The service's own site in hosting mode (the apex host, and /healthz, /readyz, /metrics on any host).
 * For now only the probes and metrics; the control API and the list of environments come later. Anything
 * else is the usual JSON 404.
 */
export function createApexApp(deps: ApexDeps) {
  const app = new Elysia()
    .use(observeRequests(deps.telemetry, deps.log))
    .use(errorHandling(deps.log, (): readonly Route[] => app.routes))
    .use(healthRoutes(deps.readiness))
    .use(
      metricsRoutes({
        telemetry: deps.telemetry,
        auth: deps.auth,
        publicUrl: deps.serviceUrl,
        metricsToken: deps.metricsToken,
      }),
    )
    .use(
      deps.authority
        ? oauthRoutes({ authority: deps.authority, publicUrl: deps.serviceUrl, log: deps.log })
        : new Elysia(),
    );
  return app;
}
