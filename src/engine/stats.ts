import { PublicError } from "../lib/errors.ts";
import { uuidV7Floor } from "../lib/ids.ts";
import type { Principal } from "../sdk/index.ts";
import { EXECUTION_STATUSES, RUN_STATUSES } from "../store/statuses.ts";
import type { Store } from "../store/store.ts";
import type { EnvironmentStats, StatsBucket, StatsSeries } from "../wire/views.ts";

/** The longest window `GET /stats` counts over: a wider one would read too many rows for an overview. */
export const MAX_STATS_WINDOW_MS = 24 * 3_600_000;

/** How many failing actions `GET /stats` names: enough for an overview, one short indexed read. */
export const FAILING_ACTIONS_SHOWN = 10;

/** The most buckets `GET /stats/series` answers: a minute's over 24 h, more than a chart is wide. */
export const MAX_SERIES_BUCKETS = 1_440;

/**
 * `GET /stats/series`'s step when none is asked: a sixtieth of the window rounded to whole minutes, at least
 * a minute (1h → 1m, 24h → 24m), and the whole window when it is shorter than that.
 */
export const defaultSeriesStepMs = (windowMs: number) =>
  Math.min(windowMs, Math.max(60_000, Math.round(windowMs / 3_600_000) * 60_000));

const zeros = <S extends string>(statuses: readonly S[], counts: Partial<Record<S, number>>) =>
  Object.fromEntries(statuses.map((s) => [s, counts[s] ?? 0])) as Record<S, number>;

/** An overview of the environment for service keys: each figure one indexed read. */
export class StatsReader {
  constructor(
    private readonly $: {
      store: Store;
      liveSockets: () => number;
      now?: () => number;
    },
  ) {}

  async read(principal: Principal, windowMs: number): Promise<EnvironmentStats> {
    if (principal.kind !== "service") throw new PublicError("access_denied", "stats are for service keys");
    const until = (this.$.now ?? Date.now)();
    const since = until - Math.min(windowMs, MAX_STATS_WINDOW_MS);
    const sinceId = uuidV7Floor(since);
    const [executions, runs, failingActions, activeRuns] = await Promise.all([
      this.$.store.stats.executionsByStatus(sinceId),
      this.$.store.stats.runsByStatus(sinceId),
      this.$.store.stats.failingActions(sinceId, FAILING_ACTIONS_SHOWN),
      this.$.store.runs.countActive(),
    ]);
    return {
      window: { since: new Date(since).toISOString(), until: new Date(until).toISOString() },
      executions: zeros(EXECUTION_STATUSES, executions),
      runs: zeros(RUN_STATUSES, runs),
      failingActions,
      activeRuns,
      liveSockets: this.$.liveSockets(),
    };
  }

  /**
   * Executions over the window in buckets of `stepMs`: as many whole steps as the window holds (at least
   * one), the last the one holding now, so the series never reaches further back than the window. Counts
   * are of executions created in a bucket; failure rate and durations of those that finished in it.
   */
  async series(principal: Principal, windowMs: number, stepMs: number, action: string | null): Promise<StatsSeries> {
    if (principal.kind !== "service") throw new PublicError("access_denied", "stats are for service keys");
    const now = (this.$.now ?? Date.now)();
    const count = Math.min(
      Math.max(1, Math.floor(Math.min(windowMs, MAX_STATS_WINDOW_MS) / stepMs)),
      MAX_SERIES_BUCKETS,
    );
    const last = Math.floor(now / stepMs) * stepMs;
    const range = { since: last - (count - 1) * stepMs, until: last + stepMs, stepMs, action };
    const [created, finished] = await Promise.all([
      this.$.store.stats.createdByBucket(range),
      this.$.store.stats.finishedByBucket(range),
    ]);
    const buckets: StatsBucket[] = Array.from({ length: count }, (_, i) => ({
      at: new Date(range.since + i * stepMs).toISOString(),
      executions: zeros(EXECUTION_STATUSES, {}),
      failureRate: null,
      durationMs: null,
    }));
    // A row's created_at may precede its id's millisecond by one: it still belongs to the window.
    const at = (bucket: number) => buckets[Math.min(Math.max(bucket, 0), count - 1)] as StatsBucket;
    for (const row of created) at(row.bucket).executions[row.status] += row.count;
    for (const row of finished) {
      const bucket = at(row.bucket);
      bucket.failureRate = row.failed / row.finished;
      bucket.durationMs = { p50: row.p50, p95: row.p95 };
    }
    return {
      window: { since: new Date(range.since).toISOString(), until: new Date(now).toISOString() },
      stepMs,
      action,
      buckets,
    };
  }
}
