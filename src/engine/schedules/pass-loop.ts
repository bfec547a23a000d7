/**
 * Runs a pass again and again until stopped: the next one after the delay the pass answered, or after
 * `retryMs` when it threw (told to `failed`). One pass at a time; `stop` waits for the one running.
 */
export class PassLoop {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private pass: Promise<void> | null = null;
  private stopped = true;

  constructor(
    private readonly run: () => Promise<number>,
    private readonly failed: (error: unknown) => void,
    private readonly retryMs: number,
  ) {}

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

  private wake(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
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
