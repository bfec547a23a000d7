import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { invalidRequest } from "../engine/errors.ts";
import { MAX_STATS_WINDOW_MS, type StatsReader } from "../engine/stats.ts";
import { authenticated } from "./auth.ts";
import type { HttpDeps } from "./deps.ts";
import { queryString } from "./query-string.ts";

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000 } as const;

const StatsQuery = queryString(
  Type.Object(
    { window: Type.Optional(Type.String({ pattern: "^[1-9][0-9]{0,5}[smh]$", description: "e.g. 15m, 1h, 24h" })) },
    { additionalProperties: false },
  ),
);

function windowMs(window: string): number {
  const ms = Number(window.slice(0, -1)) * UNIT_MS[window.at(-1) as keyof typeof UNIT_MS];
  if (ms > MAX_STATS_WINDOW_MS) {
    throw invalidRequest([{ where: "/query/window", code: "invalid", message: "window: at most 24h" }]);
  }
  return ms;
}

/** `GET /stats?window=1h`: executions and runs by status over the window, active runs, live sockets (service keys). */
export const statsRoutes = (deps: HttpDeps & { stats: StatsReader }) =>
  new Elysia({ name: "stats" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get("/stats", ({ query, principal }) => deps.stats.read(principal, windowMs(query.window ?? "1h")), {
      query: StatsQuery,
    });
