/**
 * The requests this process is answering, so that background work sharing the serving thread (SQLite's
 * fork slices: docs/decisions/forks.md) can run between them instead of in their way. A request counts
 * while it is young: one held open for a long wait (`/result?wait=110`, a run's wait) is idle, not work.
 */
export class Foreground {
  private readonly active = new Map<number, number>();
  private next = 0;

  constructor(
    /** A request older than this is waiting, not working. */
    private readonly youngMs = 100,
  ) {}

  /** A request begins; the answer is what `end` takes. */
  begin(): number {
    const id = this.next++;
    this.active.set(id, performance.now());
    return id;
  }

  end(id: number): void {
    this.active.delete(id);
  }

  /** Whether a young request is being answered. */
  busy(now = performance.now()): boolean {
    for (const [id, started] of this.active) {
      if (now - started < this.youngMs) return true;
      // One whose end was never told (a dropped connection) is forgotten after the longest wait.
      if (now - started > 300_000) this.active.delete(id);
    }
    return false;
  }

  /**
   * Resolves when no young request is being answered, polling every `pollMs`, or after `maxWaitMs` at
   * most: a server busy without pause still lets the work it delays move on.
   */
  async quiet(maxWaitMs: number, pollMs = 0.5): Promise<void> {
    const until = performance.now() + maxWaitMs;
    while (this.busy() && performance.now() < until) await Bun.sleep(pollMs);
  }

  /**
   * What background work on the serving thread does between two of its slices: a pause, so a request that
   * arrived during the slice is read from its socket (one turn of the loop is not enough for that), then
   * `quiet(maxWaitMs)`.
   */
  async giveWay(maxWaitMs: number, pauseMs = 1): Promise<void> {
    await Bun.sleep(pauseMs);
    await this.quiet(maxWaitMs);
  }
}

/** The process's one gauge: the HTTP layer tells it each request, the store's background work reads it. */
export const foreground = new Foreground();
