import { Elysia } from "elysia";
import { type Authenticator, bearerToken } from "../auth/authenticator.ts";
import { hashSecret } from "../auth/tokens.ts";
import { PublicError } from "../lib/errors.ts";
import { PROMETHEUS_CONTENT_TYPE } from "../observe/metrics.ts";
import type { Telemetry } from "../observe/telemetry.ts";
import { unauthorized } from "./auth.ts";

export interface MetricsRouteOptions {
  telemetry: Telemetry;
  auth: Authenticator;
  publicUrl: () => string;
  /** A bearer token that may read /metrics and nothing else (a scraper's), besides the service keys. */
  metricsToken?: string;
}

/** `GET /metrics`: the Prometheus text format, for a service key or METRICS_TOKEN; a user is refused. */
export const metricsRoutes = (options: MetricsRouteOptions) => {
  const tokenHash = options.metricsToken ? Buffer.from(hashSecret(options.metricsToken)) : null;
  const isMetricsToken = (token: string) => {
    if (!tokenHash) return false;
    const hash = Buffer.from(hashSecret(token));
    return hash.length === tokenHash.length && crypto.timingSafeEqual(hash, tokenHash);
  };
  return new Elysia({ name: "metrics" }).get("/metrics", async ({ request }) => {
    const token = bearerToken(request.headers.get("authorization"));
    if (!token) throw unauthorized(options.publicUrl());
    if (!isMetricsToken(token)) {
      const authentication = await options.auth.authenticate(request.headers.get("authorization"));
      if ("refused" in authentication) throw unauthorized(options.publicUrl(), authentication.refused);
      if (authentication.principal.kind !== "service") {
        throw new PublicError("access_denied", "/metrics is for a service key or METRICS_TOKEN");
      }
    }
    return new Response(await options.telemetry.registry.render(), {
      headers: { "content-type": PROMETHEUS_CONTENT_TYPE, "cache-control": "no-store" },
    });
  });
};
