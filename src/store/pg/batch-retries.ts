import type { BatchRetry } from "../store.ts";

/** SQLSTATEs of a transaction PostgreSQL broke off to let another go on (the same writes pass when tried again). */
const REASONS: Partial<Record<string, BatchRetry["reason"]>> = { "40P01": "deadlock", "40001": "serialization" };

/** Where the PostgreSQL writers tell of a batch they write again one write at a time (store.ts `onBatchRetry`). */
export class BatchRetries {
  private listener: (retry: BatchRetry) => void = () => {};

  listen(listener: (retry: BatchRetry) => void): void {
    this.listener = listener;
  }

  retried(store: BatchRetry["store"], error: unknown, writes: number): void {
    const code = (error as { code?: unknown }).code;
    const reason = (typeof code === "string" && REASONS[code]) || "other";
    this.listener({ store, reason, writes, message: error instanceof Error ? error.message : String(error) });
  }
}
