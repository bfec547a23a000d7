import { LoopFailures } from "../lib/loop-failures.ts";
import type { EngineResources } from "./resources.ts";

export interface RetentionSettings {
  /** How long an ended execution is kept. */
  keepMs: number;
  /** How often the store is swept (default: a tenth of keepMs, between 1 s and 1 h). */
  sweepMs?: number;
  /** Executions deleted per statement batch (default 500). */
  batch?: number;
}

/**
 * Forgets executions `keepMs` after they ended, in the background: each sweep deletes batches of the
 * oldest (the store never takes one that has not ended), their uploads' bytes included, until none is
 * left, yielding to requests between batches. Every instance may sweep; the deletes do not conflict.
 */
export class Retention {
  private timer: Timer | null = null;
  private sweeping: Promise<number> | null = null;
  private stopped = false;
  private readonly failures: LoopFailures;
  /** Deletes the bytes of a forgotten execution's uploads (they belong to it). */
  private readonly dropUploads = (paths: string[]) => this.$.files.deleteBytes(paths);

  constructor(
    private readonly $: Pick<EngineResources, "store" | "files" | "now" | "log">,
    private readonly settings: RetentionSettings,
  ) {
    this.failures = new LoopFailures("execution retention", $.log);
  }

  start(): void {
    const { keepMs, sweepMs = Math.min(Math.max(keepMs / 10, 1_000), 3_600_000) } = this.settings;
    const tick = () => {
      this.sweep().then(
        () => this.failures.worked(),
        (error) => this.failures.failed(error),
      );
    };
    this.timer = setInterval(tick, sweepMs);
    this.timer.unref();
    tick();
  }

  /** One sweep (joins the one under way); answers how many executions it deleted. */
  sweep(): Promise<number> {
    this.sweeping ??= this.pruneAll().finally(() => {
      this.sweeping = null;
    });
    return this.sweeping;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.sweeping?.catch(() => {});
  }

  private async pruneAll(): Promise<number> {
    const { keepMs, batch = 500 } = this.settings;
    const before = this.$.now() - keepMs;
    let total = 0;
    while (!this.stopped) {
      const pruned = await this.$.store.retention.pruneFinished(before, batch, this.dropUploads);
      total += pruned;
      if (pruned < batch) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (total > 0)
      this.$.log(`retention: forgot ${total} executions that ended before ${new Date(before).toISOString()}`);
    return total;
  }
}
