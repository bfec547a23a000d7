export interface Queued {
  reject: (error: unknown) => void;
}

/** What a writer has not committed yet (`/metrics`: actuate_db_pool_*). */
export interface WriteLoad {
  queued: number;
  inFlight: number;
}

/** The load of several writers, added up. */
export const totalLoad = (loads: WriteLoad[]): WriteLoad =>
  loads.reduce((sum, l) => ({ queued: sum.queued + l.queued, inFlight: sum.inFlight + l.inFlight }), {
    queued: 0,
    inFlight: 0,
  });

export interface LaneLimits<T> {
  maxItems: number;
  /** Past this total weight a batch closes (a single heavier item still goes alone). */
  maxWeight: number;
  weigh: (item: T) => number;
}

/**
 * Items queued during one turn of the event loop go to `write` together. One batch is in flight at a
 * time: while it waits for its commit the next one gathers everything queued meanwhile, so batches grow
 * with the load instead of taking more pool connections, and every commit (a WAL flush) carries as many
 * rows as there are to carry.
 */
export class Lane<T extends Queued> {
  private queue: T[] = [];
  private scheduled = false;
  private inFlight: Promise<void> | null = null;

  constructor(
    private readonly write: (batch: T[]) => Promise<void>,
    private readonly limits: LaneLimits<T>,
  ) {}

  push(item: T) {
    this.queue.push(item);
    if (this.scheduled || this.inFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.next();
    });
  }

  /** Writes waiting for the next batch, and whether a batch is waiting for its commit now. */
  get load(): WriteLoad {
    return { queued: this.queue.length, inFlight: this.inFlight ? 1 : 0 };
  }

  async drain(): Promise<void> {
    while (this.inFlight || this.queue.length > 0) {
      this.next();
      await this.inFlight;
    }
  }

  private next() {
    if (this.inFlight || this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.batchLength());
    this.inFlight = this.write(batch)
      // `write` answers every item itself; this only keeps a bug from leaving callers waiting for ever.
      .catch((error) => {
        for (const item of batch) item.reject(error);
      })
      .finally(() => {
        this.inFlight = null;
        this.next();
      });
  }

  /** How many queued items the next batch takes: up to maxItems, and up to maxWeight unless just one. */
  private batchLength(): number {
    const { maxItems, maxWeight, weigh } = this.limits;
    let weight = 0;
    for (let i = 0; i < this.queue.length && i < maxItems; i++) {
      weight += weigh(this.queue[i] as T);
      if (weight > maxWeight) return Math.max(i, 1);
    }
    return Math.min(this.queue.length, maxItems);
  }
}
