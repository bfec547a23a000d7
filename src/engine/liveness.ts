import { LoopFailures } from "../lib/loop-failures.ts";
import type { Telemetry } from "../observe/telemetry.ts";
import type { EngineResources } from "./resources.ts";

const MAX_BEAT_MS = 2_000;
/** The sweep's log line names this many executions, then counts the rest: a mass failure stays one readable line. */
const NAMED_IDS = 20;

/** "3 execution(s) …: a, b, c", the ids past NAMED_IDS counted. */
export function interruptedLine(ids: readonly string[]): string {
  const named = ids.slice(0, NAMED_IDS).join(", ");
  const more = ids.length > NAMED_IDS ? ` and ${ids.length - NAMED_IDS} more` : "";
  return `${ids.length} execution(s) of a stopped server were marked failed (execution_interrupted): ${named}${more}`;
}

/**
 * Keeps this server process known as alive to the other instances sharing the database, and fails the
 * function executions of instances that died while running them (a workflow run has its own lease and
 * is resumed instead). A process counts as dead `ttlMs` after its last beat.
 */
export class Liveness {
  private timer: Timer | null = null;
  private readonly failures: LoopFailures;

  constructor(
    private readonly $: Pick<EngineResources, "store" | "log" | "now"> & { telemetry?: Telemetry },
    private readonly ttlMs: number,
  ) {
    this.failures = new LoopFailures("instance heartbeat", $.log);
  }

  /** Resolves once this process is known as alive: none of its executions can be taken for a dead one's. */
  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => this.beat(), Math.min(Math.floor(this.ttlMs / 3), MAX_BEAT_MS));
  }

  /** Stops beating and says this process is gone, so others fail at once what it could not finish. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.$.store.instances.retire().catch((error) => this.failures.failed(error));
  }

  private beat(): Promise<void> {
    const now = this.$.now();
    const begun = this.failures.begin();
    return this.$.store.instances
      .keepAlive(now, now + this.ttlMs)
      .then((failed) => {
        this.failures.worked();
        if (failed.length === 0) return;
        this.$.telemetry?.executionsInterrupted(failed.length);
        this.$.log(interruptedLine(failed), { level: "warn" });
      })
      .catch((error) => this.failures.failed(error, { begun }));
  }
}
