// The request-key index's writer thread (writers.ts starts it): opens the index's own file, attaches the
// database whose executions it reads the keys of, and applies each write it is sent (a JSON string), in
// order, answering { id, ok } or { id, ok: false, message }.
// Listed as an entrypoint of `bun run build`, so the compiled binary carries it.
import { Database } from "bun:sqlite";
import { messageOf } from "../../../lib/errors.ts";
import { createRequestKeyTables, type KeyWrite, RequestKeyWriter } from "./file.ts";

export type WorkerRequest = (
  | { kind: "open"; path: string; databasePath: string; generationSize: number }
  | { kind: "close" }
  | KeyWrite
) & { id: number };
export type WorkerAnswer = { id: number; ok: true } | { id: number; ok: false; message: string };

declare const self: Worker;

/** The name the database is attached under on this thread's connection. */
const DATABASE = "store";

let db: Database | null = null;
let writer: RequestKeyWriter | null = null;
/** Why there is no writer: every write answers with it. */
let notOpen = "the request-key file is not open";

function apply(request: WorkerRequest): void {
  if (request.kind === "open") {
    try {
      db = new Database(request.path, { create: true, strict: true });
      db.exec("PRAGMA journal_mode = WAL");
      // Derived data: a write lost to a power cut is merged again from the executions (index.ts).
      db.exec("PRAGMA synchronous = NORMAL");
      db.exec("PRAGMA busy_timeout = 5000");
      // SQLite's default page cache (2 MiB), not the database's 64: a merge costs the same CPU a key with
      // either (the pages it misses are in the OS's cache), and a larger one held ~75 MiB more under load.
      createRequestKeyTables(db, "main");
      db.run(`attach database ?1 as ${DATABASE}`, [request.databasePath]);
      writer = new RequestKeyWriter(db, { keys: "main", executions: DATABASE }, request.generationSize);
    } catch (error) {
      notOpen = `the request-key file ${request.path} could not be opened: ${(error as Error).message}`;
      throw error;
    }
    return;
  }
  if (request.kind === "close") {
    // Finalizes the statements and lets the files go now, not when they are collected.
    db?.close(true);
    db = null;
    writer = null;
    return;
  }
  if (!writer) throw new Error(notOpen);
  writer.write(request);
}

self.onmessage = (event: MessageEvent<string>) => {
  const request = JSON.parse(event.data) as WorkerRequest;
  let answer: WorkerAnswer;
  try {
    apply(request);
    answer = { id: request.id, ok: true };
  } catch (error) {
    answer = { id: request.id, ok: false, message: messageOf(error) };
  }
  self.postMessage(answer);
};
