import type { Database } from "bun:sqlite";
import type { FromCheckpointer, ToCheckpointer } from "./checkpointer.ts";

/**
 * Moves the WAL's checkpoints off the server's connection onto a worker thread (checkpointer.ts).
 * Started by the first group commit, so a CLI command that opens the database starts no thread.
 * If the worker fails, the connection checkpoints itself again, as SQLite does by default.
 */
export class WalCheckpoints {
  private worker: Worker | null = null;
  private closed: Promise<void> | null = null;

  constructor(
    private readonly client: Database,
    private readonly path: string,
  ) {}

  start(): void {
    if (this.worker || this.closed || this.path === ":memory:") return;
    const worker = new Worker(new URL("./checkpointer.ts", import.meta.url), { smol: true });
    worker.unref();
    worker.addEventListener("error", (event) => {
      console.error(
        `actuate: the WAL checkpointer stopped (${event.message}); the server connection checkpoints again`,
      );
      this.client.exec("PRAGMA wal_autocheckpoint = 1000");
      this.worker = null;
    });
    this.client.exec("PRAGMA wal_autocheckpoint = 0");
    worker.postMessage({ type: "open", path: this.path } satisfies ToCheckpointer);
    this.worker = worker;
  }

  /** Stops the worker and leaves an empty WAL behind. */
  close(): Promise<void> {
    this.closed ??= this.stop();
    return this.closed;
  }

  private async stop() {
    const worker = this.worker;
    this.worker = null;
    if (worker) {
      await new Promise<void>((resolve) => {
        worker.addEventListener("message", (event: MessageEvent<FromCheckpointer>) => {
          if (event.data.type === "closed") resolve();
        });
        worker.addEventListener("error", () => resolve());
        worker.postMessage({ type: "close" } satisfies ToCheckpointer);
      });
      worker.terminate();
    }
    if (this.path !== ":memory:") this.client.query("PRAGMA wal_checkpoint(TRUNCATE)").get();
  }
}
