import { readdirSync } from "node:fs";
import { Counter, Gauge, Histogram, Registry } from "./metrics.ts";
import { NO_TRACER, type SpanAttributes, type SpanParent, type Tracer } from "./tracing.ts";

/** Seconds: a quick handler (1 ms) up to a long workflow (5 min). */
const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120];

/** What an ended execution tells the metrics (a row of the store, or the same fields). */
export interface EndedExecution {
  action: string;
  kind: string;
  status: string;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

export type GaugeSource = () => Iterable<[readonly string[], number]> | number;

/**
 * Series of `actuate_executions_total` an instance keeps in hosting mode: environments × actions × ended
 * statuses (1,000 environments of 10 actions that succeed and fail: 20,000; docs/decisions/observability.md).
 */
const MAX_EXECUTION_SERIES = 100_000;

export interface TelemetryOptions {
  /** Hosting mode: `actuate_executions_total` gets an `environment` label (single mode's series stay as they were). */
  environments?: boolean;
}

/** A tracer whose spans carry `actuate.environment`; the shared tracer itself when tracing is off. */
function environmentTracer(tracer: Tracer, handle: string): Tracer {
  if (!tracer.enabled) return tracer;
  const own: SpanAttributes = { "actuate.environment": handle };
  return {
    enabled: true,
    start: (name: string, parent?: SpanParent, attributes?: SpanAttributes) =>
      tracer.start(name, parent, attributes === undefined ? own : { ...attributes, ...own }),
    shutdown: () => tracer.shutdown(),
  };
}

/**
 * The server's metrics (Prometheus names `actuate_*` and the process's) and its tracer. One per server;
 * the engine, the adapters and main report to it, `GET /metrics` renders it.
 */
export class Telemetry {
  readonly registry = new Registry();
  private readonly executions: Counter;
  private readonly executionSeconds: Histogram;
  private readonly requests: Counter;
  private readonly requestSeconds: Histogram;
  private readonly mcpCalls: Counter;
  private readonly queueDelay: Histogram;
  private readonly batchRetries: Counter;
  private readonly liveResultsDelivered: Counter;
  private readonly liveSocketsBehind: Counter;
  private readonly takeovers: Counter;
  private readonly interrupted: Counter;
  /** The handle that labels this view's execution counters (hosting mode's `forEnvironment`), else null. */
  private readonly environment: string | null = null;
  private readonly labelled: boolean;

  constructor(
    readonly tracer: Tracer = NO_TRACER,
    options: TelemetryOptions = {},
  ) {
    const r = this.registry;
    this.labelled = options.environments === true;
    this.executions = r.register(
      this.labelled
        ? new Counter(
            "actuate_executions_total",
            "Executions that ended on this instance, by environment",
            ["environment", "action", "kind", "status"],
            MAX_EXECUTION_SERIES,
          )
        : new Counter("actuate_executions_total", "Executions that ended on this instance", [
            "action",
            "kind",
            "status",
          ]),
    );
    this.executionSeconds = r.register(
      new Histogram(
        "actuate_execution_duration_seconds",
        "From start to end of an execution (a workflow's from its admission)",
        ["action"],
        DURATION_BUCKETS,
      ),
    );
    this.requests = r.register(
      new Counter("actuate_http_requests_total", "HTTP requests answered, by route template", ["route", "status"]),
    );
    this.requestSeconds = r.register(
      new Histogram("actuate_http_request_duration_seconds", "Time to answer an HTTP request", ["route"], HTTP_BUCKETS),
    );
    this.mcpCalls = r.register(
      new Counter("actuate_mcp_calls_total", "MCP tool calls, by outcome", ["tool", "outcome"]),
    );
    this.queueDelay = r.register(
      new Histogram(
        "actuate_workflow_queue_delay_seconds",
        "How long a due workflow run waited for a worker",
        [],
        DURATION_BUCKETS,
      ),
    );
    this.batchRetries = r.register(
      new Counter(
        "actuate_store_batch_retries_total",
        "Batches of database writes that failed as a whole and were written again one write at a time",
        ["store", "reason"],
      ),
    );
    this.liveResultsDelivered = r.register(
      new Counter(
        "actuate_live_results_total",
        "Live-query results (add-query answers, changed results) by delivery: sent at once; held while the socket had unread bytes (only the latest of each is sent); sent_late, once it drained",
        ["delivery"],
      ),
    );
    this.liveSocketsBehind = r.register(
      new Counter(
        "actuate_live_sockets_fell_behind_total",
        "/session sockets closed (4013) because a message would have been dropped: the client left 16 MiB unread",
        [],
      ),
    );
    this.takeovers = r.register(
      new Counter(
        "actuate_workflow_takeovers_total",
        "Workflow runs this instance claimed from another whose lease had expired (a dead or stalled instance)",
        [],
      ),
    );
    this.interrupted = r.register(
      new Counter(
        "actuate_interrupted_executions_total",
        "Function executions of dead instances this instance's heartbeat failed (execution_interrupted)",
        [],
      ),
    );
    // Shown at 0 from the start, so a rate over them needs no first event.
    this.takeovers.inc([], 0);
    this.interrupted.inc([], 0);
    this.processMetrics();
  }

  /**
   * What one environment reports to: the same registry, its execution counters labelled with its handle
   * (hosting mode) and its spans carrying `actuate.environment`. Made once per environment; single mode
   * (no label) keeps the process's telemetry, tracer included.
   */
  forEnvironment(handle: string): Telemetry {
    if (!this.labelled) return this;
    // A view over this object (its metrics are this one's, through the prototype), not a copy.
    return Object.assign(Object.create(this) as Telemetry, {
      environment: handle,
      tracer: environmentTracer(this.tracer, handle),
    });
  }

  executionEnded(row: EndedExecution): void {
    this.executions.inc(
      this.labelled ? [this.environment ?? "", row.action, row.kind, row.status] : [row.action, row.kind, row.status],
    );
    const from = row.kind === "workflow" ? row.createdAt : (row.startedAt ?? row.createdAt);
    if (row.finishedAt !== null) this.executionSeconds.observe([row.action], (row.finishedAt - from) / 1000);
  }

  httpAnswered(route: string, status: number, seconds: number): void {
    const code = String(status);
    this.requests.inc([route, code]);
    this.requestSeconds.observe([route], seconds);
  }

  mcpCalled(tool: string, outcome: string): void {
    this.mcpCalls.inc([tool, outcome]);
  }

  runStarted(delaySeconds: number): void {
    this.queueDelay.observe([], Math.max(0, delaySeconds));
  }

  batchRetried(store: string, reason: string): void {
    this.batchRetries.inc([store, reason]);
  }

  workflowTakenOver(): void {
    this.takeovers.inc();
  }

  executionsInterrupted(count: number): void {
    this.interrupted.inc([], count);
  }

  liveResults(delivery: "sent" | "held" | "sent_late", count: number): void {
    this.liveResultsDelivered.inc([delivery], count);
  }

  liveSocketFellBehind(): void {
    this.liveSocketsBehind.inc();
  }

  /** A gauge read at each scrape (live sockets, the release, the pool). */
  gauge(name: string, help: string, labelNames: readonly string[], source: GaugeSource): void {
    this.registry.register(new Gauge(name, help, labelNames, source));
  }

  private processMetrics(): void {
    const r = this.registry;
    const started = Math.round((Date.now() - performance.now()) / 1000);
    const cpu = (pick: (usage: NodeJS.CpuUsage) => number) => () => pick(process.cpuUsage()) / 1e6;
    r.register(
      new Gauge(
        "process_cpu_user_seconds_total",
        "User CPU time",
        [],
        cpu((u) => u.user),
        "counter",
      ),
    );
    r.register(
      new Gauge(
        "process_cpu_system_seconds_total",
        "System CPU time",
        [],
        cpu((u) => u.system),
        "counter",
      ),
    );
    r.register(
      new Gauge(
        "process_cpu_seconds_total",
        "User and system CPU time",
        [],
        cpu((u) => u.user + u.system),
        "counter",
      ),
    );
    r.register(new Gauge("process_start_time_seconds", "Start time of the process (Unix seconds)", [], () => started));
    r.register(new Gauge("process_resident_memory_bytes", "Resident memory size", [], () => process.memoryUsage().rss));
    r.register(new Gauge("process_heap_bytes", "JavaScript heap in use", [], () => process.memoryUsage().heapUsed));
    r.register(new Gauge("process_open_fds", "Open file descriptors", [], openFileDescriptors));
  }
}

function openFileDescriptors(): number {
  try {
    return readdirSync("/proc/self/fd").length;
  } catch {
    return Number.NaN;
  }
}
