import type { Telemetry } from "./telemetry.ts";

/** What the server's gauges read, as plain callbacks: observe/ knows none of the parts it reports on. */
export interface GaugeReaders {
  /** The /session sockets of this server and what they hold. */
  live(): { sockets: number; subscriptions: number; streams: number; unsentBytes: number };
  /** Workflow runs not ended, by status, in the whole database. */
  activeRuns(): Promise<Record<string, number>>;
  /** The database pool of this server. */
  pool(): { size: number; queued: number; inFlight: number };
  /** How many instances share the database now (their heartbeats not expired; SQLite: 1). */
  liveInstances(): Promise<number>;
  /** The active release's version; undefined while none is active. */
  releaseVersion(): string | undefined;
  serverVersion: string;
}

/** The gauges read at each scrape: live sockets, the active release, the database pool. */
export function registerServerGauges(telemetry: Telemetry, readers: GaugeReaders): void {
  telemetry.gauge("actuate_live_sockets", "Open /session sockets", [], () => readers.live().sockets);
  telemetry.gauge(
    "actuate_live_subscriptions",
    "Live queries and execution streams held by /session sockets",
    ["kind"],
    () => {
      const { subscriptions, streams } = readers.live();
      return [
        [["query"], subscriptions],
        [["stream"], streams],
      ];
    },
  );
  telemetry.gauge(
    "actuate_live_unsent_bytes",
    "Bytes sent on /session sockets that their clients have not read yet",
    [],
    () => readers.live().unsentBytes,
  );
  // Read from the database before each scrape (on every instance: a count of the whole database's runs).
  let runs: Record<string, number> = {};
  telemetry.registry.refreshing(async () => {
    runs = await readers.activeRuns().catch(() => ({}));
  });
  let instances = Number.NaN;
  telemetry.registry.refreshing(async () => {
    instances = await readers.liveInstances().catch(() => Number.NaN);
  });
  telemetry.gauge(
    "actuate_instances_live",
    "Server processes sharing the database whose heartbeat has not expired (the whole database)",
    [],
    () => instances,
  );
  telemetry.gauge("actuate_workflow_runs", "Workflow runs not ended, by status (the whole database)", ["status"], () =>
    Object.entries(runs).map(([status, count]) => [[status], count]),
  );
  telemetry.gauge("actuate_db_pool_size", "Database connections this server may open", [], () => readers.pool().size);
  telemetry.gauge(
    "actuate_db_pool_writes_queued",
    "Writes waiting for the next group commit",
    [],
    () => readers.pool().queued,
  );
  telemetry.gauge(
    "actuate_db_pool_batches_in_flight",
    "Group-commit batches waiting for their commit now",
    [],
    () => readers.pool().inFlight,
  );
  telemetry.gauge(
    "actuate_release_info",
    "The active release (1) and this server's version",
    ["version", "server_version"],
    () => {
      const version = readers.releaseVersion();
      return version === undefined ? [] : [[[version, readers.serverVersion], 1]];
    },
  );
}
