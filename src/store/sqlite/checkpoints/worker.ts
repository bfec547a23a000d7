// The checkpoint thread (checkpoints/index.ts starts it): its own connection to the database, on which it
// runs a PASSIVE WAL checkpoint whenever it is told, answering { ok } or { ok: false, message }.
// Listed as an entrypoint of `bun run build`, so the compiled binary carries it.
import { Database } from "bun:sqlite";
import { messageOf } from "../../../lib/errors.ts";

export type CheckpointRequest = { kind: "open"; path: string } | { kind: "checkpoint" } | { kind: "close" };
export type CheckpointAnswer =
  | { kind: CheckpointRequest["kind"]; ok: true }
  | { kind: CheckpointRequest["kind"]; ok: false; message: string };

declare const self: Worker;

let db: Database | null = null;

function apply(request: CheckpointRequest): void {
  if (request.kind === "open") {
    db = new Database(request.path, { strict: true });
    db.exec("PRAGMA busy_timeout = 5000");
    return;
  }
  if (request.kind === "close") {
    db?.close(true);
    db = null;
    return;
  }
  // PASSIVE: copies what no reader still needs and syncs the file, never waiting for the serving
  // connection, which goes on committing meanwhile.
  db?.query("PRAGMA wal_checkpoint(PASSIVE)").get();
}

self.onmessage = (event: MessageEvent<CheckpointRequest>) => {
  const request = event.data;
  let answer: CheckpointAnswer;
  try {
    apply(request);
    answer = { kind: request.kind, ok: true };
  } catch (error) {
    answer = { kind: request.kind, ok: false, message: messageOf(error) };
  }
  self.postMessage(answer);
};
