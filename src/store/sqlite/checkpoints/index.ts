import type { Database } from "bun:sqlite";
import { workerEntry } from "../worker-entry.ts";
import type { CheckpointAnswer, CheckpointRequest } from "./worker.ts";

/** How often the thread checkpoints while the database is being written. */
const CHECKPOINT_MS = 100;
/**
 * The serving connection's own automatic checkpoint, kept as the bound on the WAL (pages; SQLite's
 * default is 1 000). Under steady writes a checkpoint on another connection never reaches the WAL's end,
 * so the log never starts over by itself: this one does, and finds almost everything copied already.
 */
export const BACKSTOP_PAGES = 4000;

/**
 * WAL checkpoints on a thread of their own (issue 14): SQLite's automatic checkpoint ran on the serving
 * connection every 1 000 pages and stalled its group commit 5-20 ms (the copy and the fsync), ~1.5 % of
 * them. Here a worker thread runs a PASSIVE checkpoint every CHECKPOINT_MS while commits come in, and the
 * serving connection checkpoints only past BACKSTOP_PAGES, when little is left to copy or sync. The thread
 * starts with the first commit (an idle server has none) and is told of commits at most once an interval.
 * A failed checkpoint changes nothing but speed (the backstop still bounds the WAL): it is reported once.
 */
export class BackgroundCheckpoints {
  private worker: Worker | null = null;
  private due = false;
  private closing: Promise<void> | null = null;
  private reported = false;
  warn: (message: string) => void = () => {};

  constructor(
    client: Database,
    private readonly path: string,
  ) {
    client.exec(`PRAGMA wal_autocheckpoint = ${BACKSTOP_PAGES}`);
  }

  /** A group commit has written to the WAL. */
  committed(): void {
    if (this.due || this.closing) return;
    this.due = true;
    const worker = this.worker ?? this.start();
    setTimeout(() => {
      this.due = false;
      if (this.worker === worker) this.send(worker, { kind: "checkpoint" });
    }, CHECKPOINT_MS).unref();
  }

  /** Stops the thread, after the checkpoint it may be running. */
  close(): Promise<void> {
    this.closing ??= this.stop();
    return this.closing;
  }

  private async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (!worker) return;
    await new Promise<void>((resolve) => {
      worker.addEventListener("message", ({ data }: MessageEvent<CheckpointAnswer>) => {
        if (data.kind === "close") resolve();
      });
      worker.addEventListener("error", () => resolve());
      this.send(worker, { kind: "close" });
    });
    worker.terminate();
  }

  private start(): Worker {
    const worker = new Worker(workerEntry("checkpoints"));
    worker.unref();
    worker.onmessage = ({ data }: MessageEvent<CheckpointAnswer>) => {
      if (!data.ok) this.report(`a background WAL checkpoint failed (${data.kind}): ${data.message}`);
    };
    worker.onerror = (event) => {
      event.preventDefault();
      this.report(`the WAL checkpoint thread failed: ${event.message}`);
      // The next commit starts another.
      if (this.worker === worker) this.worker = null;
      worker.terminate();
    };
    this.send(worker, { kind: "open", path: this.path });
    this.worker = worker;
    return worker;
  }

  private send(worker: Worker, request: CheckpointRequest): void {
    worker.postMessage(request);
  }

  private report(message: string): void {
    if (this.reported) return;
    this.reported = true;
    this.warn(`${message}; the database's own checkpoints go on (every ${BACKSTOP_PAGES} pages)`);
  }
}
