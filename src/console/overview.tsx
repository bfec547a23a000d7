/** @jsxImportSource preact */

import {
  type ActuateClient,
  ActuateError,
  type EnvironmentStats,
  type Execution,
  type PublishedRelease,
  type RunSummary,
} from "../client/index.ts";
import { EXECUTION_STATUSES } from "../wire/statuses.ts";
import { LoadFailure } from "./alert.tsx";
import { OverviewCharts } from "./charts.tsx";
import { duration, spanMs } from "./format.ts";
import { hrefOf } from "./route.ts";
import { EmptyState, LoadingState, StatusBadge, When } from "./ui.tsx";
import { useRefreshOnExecutions } from "./use-live-list.ts";
import { usePoll } from "./use-poll.ts";

// Every 5 s: an overview is glanced at, and each pass is a handful of indexed reads.
const EVERY_MS = 5_000;
const WINDOW = "1h";
const WINDOW_MS = 3_600_000;
const IN_PROGRESS = ["running", "sleeping", "queued"] as const;
const IN_PROGRESS_SHOWN = 10;
// A user's figures are counted from one page of their own executions: bounded, and said so when more.
const USER_PAGE = 200;

/**
 * What the overview shows. A service key reads `GET /stats` and the release history; a user may read
 * neither (403), so the page counts that user's own executions and runs instead, and says so.
 */
type Overview =
  | { kind: "environment"; stats: EnvironmentStats; release: PublishedRelease | null; inProgress: RunSummary[] }
  | {
      kind: "own";
      executions: Record<Execution["status"], number>;
      more: boolean;
      failingActions: { action: string; failed: number }[];
      inProgress: RunSummary[];
    };

export function OverviewPage(props: { client: ActuateClient }) {
  const overview = usePoll(() => readOverview(props.client), [props.client], EVERY_MS);
  useRefreshOnExecutions(props.client, overview.retry);
  const data = overview.data;
  return (
    <main>
      <h1>Overview</h1>
      <LoadFailure loaded={overview} />
      {!data && !overview.error && <LoadingState what="the overview" />}
      {data?.kind === "own" && (
        <p class="hint" data-testid="own-figures">
          Signed in as a user: these are your own executions and runs. The active release, the whole environment's
          figures and live sockets are shown to service keys.
        </p>
      )}
      {data && (
        <div class="tiles">
          {data.kind === "environment" && <ReleaseTile release={data.release} liveSockets={data.stats.liveSockets} />}
          <section aria-labelledby="counts-heading">
            <h2 id="counts-heading">Executions in the last hour</h2>
            <ul class="counts">
              {EXECUTION_STATUSES.map((status) => {
                const count = data.kind === "environment" ? data.stats.executions[status] : data.executions[status];
                return (
                  <li key={status} data-testid={`count-${status}`}>
                    <span class="count">
                      {count}
                      {data.kind === "own" && data.more ? "+" : ""}
                    </span>{" "}
                    <span class={`status-${status}`}>{status}</span>
                  </li>
                );
              })}
            </ul>
          </section>
          <FailingActions items={data.kind === "environment" ? data.stats.failingActions : data.failingActions} />
          <RunsInProgress runs={data.inProgress} counts={data.kind === "environment" ? data.stats.activeRuns : null} />
        </div>
      )}
      <OverviewCharts client={props.client} />
    </main>
  );
}

async function readOverview(client: ActuateClient): Promise<Overview> {
  const [stats, inProgress] = await Promise.all([environmentStats(client), readInProgress(client)]);
  if (stats === null) return readOwn(client, inProgress);
  return { kind: "environment", stats, release: await activeRelease(client), inProgress };
}

/** `GET /stats`, or null for a caller it refuses (a user): the page then counts the caller's own. */
async function environmentStats(client: ActuateClient): Promise<EnvironmentStats | null> {
  try {
    return await client.stats(WINDOW);
  } catch (error) {
    if (error instanceof ActuateError && error.code === "access_denied") return null;
    throw error;
  }
}

/** The caller's runs not ended (all runs for a service key), newest first. */
async function readInProgress(client: ActuateClient): Promise<RunSummary[]> {
  const pages = await Promise.all(IN_PROGRESS.map((status) => client.runs.list({ status, limit: IN_PROGRESS_SHOWN })));
  return pages
    .flatMap((p) => p.items)
    .sort((a, b) => (a.id < b.id ? 1 : -1))
    .slice(0, IN_PROGRESS_SHOWN);
}

/** The active release: the history is newest first, and the active one is usually on its first page. */
async function activeRelease(client: ActuateClient): Promise<PublishedRelease | null> {
  let cursor: string | undefined;
  for (;;) {
    const page = await client.releases.list({ limit: 200, cursor });
    const active = page.items.find((r) => r.active);
    if (active || !page.nextCursor) return active ?? null;
    cursor = page.nextCursor;
  }
}

async function readOwn(client: ActuateClient, inProgress: RunSummary[]): Promise<Overview> {
  const since = new Date(Date.now() - WINDOW_MS).toISOString();
  const page = await client.executions.list({ since, limit: USER_PAGE });
  const executions = Object.fromEntries(EXECUTION_STATUSES.map((s) => [s, 0])) as Record<Execution["status"], number>;
  const failed = new Map<string, number>();
  for (const e of page.items) {
    executions[e.status]++;
    if (e.status === "failed") failed.set(e.action, (failed.get(e.action) ?? 0) + 1);
  }
  const failingActions = [...failed]
    .map(([action, count]) => ({ action, failed: count }))
    .sort((a, b) => b.failed - a.failed || (a.action < b.action ? -1 : 1));
  return { kind: "own", executions, more: page.nextCursor !== null, failingActions, inProgress };
}

function ReleaseTile(props: { release: PublishedRelease | null; liveSockets: number }) {
  const { release } = props;
  return (
    <section aria-labelledby="release-heading">
      <h2 id="release-heading">Active release</h2>
      {release ? (
        <dl>
          <dt>Version</dt>
          <dd data-testid="active-version">{release.version}</dd>
          <dt>Published</dt>
          <dd>
            <When at={release.publishedAt} />
          </dd>
          <dt>Published by</dt>
          <dd data-testid="published-by">{release.publishedBy ?? "not recorded"}</dd>
          <dt>Active since</dt>
          <dd>
            <When at={release.activatedAt} />
          </dd>
        </dl>
      ) : (
        <EmptyState title="No release is active." />
      )}
      <p>
        <span class="count" data-testid="live-sockets">
          {props.liveSockets}
        </span>{" "}
        live socket{props.liveSockets === 1 ? "" : "s"} on this server
      </p>
    </section>
  );
}

function FailingActions(props: { items: { action: string; failed: number }[] }) {
  return (
    <section aria-labelledby="failing-heading">
      <h2 id="failing-heading">Failing actions</h2>
      {props.items.length === 0 ? (
        <EmptyState title="Nothing failed in the last hour." />
      ) : (
        <table aria-labelledby="failing-heading">
          <thead>
            <tr>
              <th scope="col">Action</th>
              <th scope="col" class="num">
                Failed
              </th>
            </tr>
          </thead>
          <tbody>
            {props.items.map((a) => (
              <tr key={a.action}>
                <td>
                  <a href={hrefOf({ page: "executions", filters: { action: a.action, status: "failed" } })}>
                    {a.action}
                  </a>
                </td>
                <td class="num">{a.failed}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function RunsInProgress(props: { runs: RunSummary[]; counts: EnvironmentStats["activeRuns"] | null }) {
  const { counts } = props;
  return (
    <section aria-labelledby="in-progress-heading">
      <h2 id="in-progress-heading">Runs in progress</h2>
      {counts && (
        <p data-testid="active-runs">
          {counts.running} running, {counts.sleeping} sleeping, {counts.queued} queued
        </p>
      )}
      {props.runs.length === 0 ? (
        <EmptyState title="No run in progress." />
      ) : (
        <ul>
          {props.runs.map((run) => (
            <li key={run.id}>
              <a href={hrefOf({ page: "runs", id: run.id })}>{run.workflow}</a> <StatusBadge status={run.status} />{" "}
              <span class="hint">for {duration(spanMs(run.createdAt, null))}</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
