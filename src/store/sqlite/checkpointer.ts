// A second connection to the server's SQLite database, on its own thread, that checkpoints the WAL.
// PASSIVE checkpoints take no write lock, so the server's commits never wait for this one, and the
// copying back into the database file (and its fsync) no longer happens inside a request's commit.
import { Database } from "bun:sqlite";

export type ToCheckpointer = { type: "open"; path: string } | { type: "close" };
export type FromCheckpointer = { type: "closed" };

const EVERY_MS = 250;

declare const self: Worker;

let client: Database | null = null;
let timer: Timer | null = null;

self.onmessage = (event: MessageEvent<ToCheckpointer>) => {
  if (event.data.type === "open") {
    client = new Database(event.data.path, { strict: true });
    client.exec("PRAGMA busy_timeout = 5000");
    timer = setInterval(() => client?.query("PRAGMA wal_checkpoint(PASSIVE)").get(), EVERY_MS);
  } else {
    if (timer) clearInterval(timer);
    client?.close();
    client = null;
    self.postMessage({ type: "closed" } satisfies FromCheckpointer);
  }
};
