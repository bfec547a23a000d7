import { LoopFailures } from "../../lib/loop-failures.ts";
import type { Log } from "../../observe/log.ts";

/**
 * Runs a pass again and again until stopped: the next one after the delay the pass answered, or after
 * `retryMs` when it threw (told to `failed`). One pass at a time; `stop` waits for the one running.
 */
export class PassLoop {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private pass: Promise<void> | null = null;
  private stopped = true;
  private readonly failures: LoopFailures;
  /**
   * What `failures.begin()` answered as the current pass began: a pass whose claim worked told the end
   * of an outage, and its calls, begun with it, failing on a connection the outage left dead belong
   * to that outage, not to a new one.
   */
  private passBegun = 0;

  constructor(
    /** The loop, as the log names it. */
    name: string,
    log: Log,
    private readonly run: () => Promise<number>,
    private readonly retryMs: number,
  ) {
    this.failures = new LoopFailures(name, log);
  }

  get running(): boolean {
    return !this.stopped;
  }

  start(): void {
    this.stopped = false;
    this.wake(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.pass;
  }

  /** A store call of the current pass failed; `about`: what it was doing. */
  failed(error: unknown, about?: Record<string, unknown>): void {
    this.failures.failed(error, { begun: this.passBegun, about });
  }

  /** A store call of the current pass worked (the end of an outage, if one was told). */
  worked(): void {
    this.failures.worked();
  }

  private wake(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.passBegun = this.failures.begin();
      this.pass = this.run()
        .then(
          (sleep) => this.wake(sleep),
          (error) => {
            this.failed(error);
            this.wake(this.retryMs);
          },
        )
        .finally(() => {
          this.pass = null;
        });
    }, ms);
  }
}
