import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { invalidRequest } from "../engine/errors.ts";
import { executionListFilter } from "../engine/list-filters.ts";
import { defaultSeriesStepMs, MAX_SERIES_BUCKETS, MAX_STATS_WINDOW_MS, type StatsReader } from "../engine/stats.ts";
import { authenticated } from "./auth.ts";
import type { HttpDeps } from "./deps.ts";
import { queryString } from "./query-string.ts";

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000 } as const;
const DURATION = "^[1-9][0-9]{0,5}[smh]$";
const windowParam = Type.Optional(Type.String({ pattern: DURATION, description: "e.g. 15m, 1h, 24h" }));

const StatsQuery = queryString(Type.Object({ window: windowParam }, { additionalProperties: false }));

const SeriesQuery = queryString(
  Type.Object(
    {
      window: windowParam,
      step: Type.Optional(Type.String({ pattern: DURATION, description: "e.g. 1m, 15m, 1h" })),
      action: executionListFilter.action,
    },
    { additionalProperties: false },
  ),
);

const durationMs = (text: string) => Number(text.slice(0, -1)) * UNIT_MS[text.at(-1) as keyof typeof UNIT_MS];

function windowMs(window: string): number {
  const ms = durationMs(window);
  if (ms > MAX_STATS_WINDOW_MS) {
    throw invalidRequest([{ where: "/query/window", code: "invalid", message: "window: at most 24h" }]);
  }
  return ms;
}

function stepMs(step: string | undefined, window: number): number {
  if (step === undefined) return defaultSeriesStepMs(window);
  const ms = durationMs(step);
  const problem =
    ms > window
      ? "step: at most the window (at least one bucket)"
      : Math.floor(window / ms) > MAX_SERIES_BUCKETS
        ? `step: at least the window / ${MAX_SERIES_BUCKETS} (at most ${MAX_SERIES_BUCKETS} buckets)`
        : null;
  if (problem) throw invalidRequest([{ where: "/query/step", code: "invalid", message: problem }]);
  return ms;
}

/**
 * `GET /stats?window=1h`: executions and runs by status over the window, active runs, live sockets;
 * `GET /stats/series?window=1h&step=1m&action=`: executions over time (service keys).
 */
export const statsRoutes = (deps: HttpDeps & { stats: StatsReader }) =>
  new Elysia({ name: "stats" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get("/stats", ({ query, principal }) => deps.stats.read(principal, windowMs(query.window ?? "1h")), {
      query: StatsQuery,
    })
    .get(
      "/stats/series",
      ({ query, principal }) => {
        const window = windowMs(query.window ?? "1h");
        return deps.stats.series(principal, window, stepMs(query.step, window), query.action ?? null);
      },
      { query: SeriesQuery },
    );
