import { Elysia } from "elysia";
import type { Authenticator } from "../auth/authenticator.ts";
import type { Storage } from "../files/storage.ts";
import { controlRoutes } from "../http/control.ts";
import { errorHandling } from "../http/errors.ts";
import { healthRoutes, type ReadinessChecks } from "../http/health.ts";
import { INSTANCE_HEADER } from "../http/instances.ts";
import type { Route } from "../http/methods.ts";
import { metricsRoutes } from "../http/metrics.ts";
import { type OAuthRouteOptions, oauthRoutes } from "../http/oauth.ts";
import { observeRequests } from "../http/observe.ts";
import type { Log } from "../observe/log.ts";
import type { Telemetry } from "../observe/telemetry.ts";
import type { Store } from "../store/store.ts";
import type { Sealer } from "../variables/sealing.ts";

export interface ApexDeps {
  /** Who may read /metrics: the service keys (and METRICS_TOKEN); the operators of the control API. */
  auth: Authenticator;
  /** The service's URL (SERVICE_URL), named in a refusal's challenge. */
  serviceUrl: () => string;
  readiness: ReadinessChecks;
  telemetry: Telemetry;
  metricsToken?: string;
  log: Log;
  /** The process's store: its `control` part is what the control API reads and writes. */
  store: Store;
  /** The process's file storage: a deleted environment's bytes go from it. */
  storage: Storage;
  /** An environment's URL (`<scheme>://<handle>.<apex>[:port]`), as the control API lists it. */
  environmentUrl: (handle: string) => string;
  /**
   * Ends an environment's sockets and running work on this instance: called by `DELETE
   * /environments/{handle}?confirm=true` before the environment's rows go.
   */
  evict?: (id: number) => Promise<void>;
  /** The process's bundles folder (a promoted release is loaded there) and the poll of changes, run now. */
  bundlesDir?: string;
  changed?: () => Promise<void>;
  /** The service's one authorization authority (auth/service-authority.ts), unless AUTH_ISSUER is the authority. */
  authority?: OAuthRouteOptions["authority"];
  /** What seals the secrets set through `/environments/{handle}/variables`; null: none (refused). */
  sealer?: Sealer | null;
}

/**
 * The service's own site in hosting mode (the apex host, and /healthz, /readyz, /metrics on any host):
 * the probes, metrics, the control API (`http/control.ts` over `engine/control/`) and its `/openapi.json`. Anything else is the
 * usual JSON 404.
 */
export function createApexApp(deps: ApexDeps) {
  const app = new Elysia()
    .headers({ [INSTANCE_HEADER]: deps.store.instances.id })
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
    )
    .use(controlRoutes(deps));
  return app;
}
