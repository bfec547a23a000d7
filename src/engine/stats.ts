import { PublicError } from "../lib/errors.ts";
import { uuidV7Floor } from "../lib/ids.ts";
import type { Principal } from "../sdk/index.ts";
import { EXECUTION_STATUSES, RUN_STATUSES } from "../store/statuses.ts";
import type { Store } from "../store/store.ts";
import type { EnvironmentStats } from "../wire/views.ts";

/** The longest window `GET /stats` counts over: a wider one would read too many rows for an overview. */
export const MAX_STATS_WINDOW_MS = 24 * 3_600_000;

/** How many failing actions `GET /stats` names: enough for an overview, one short indexed read. */
export const FAILING_ACTIONS_SHOWN = 10;

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
}
