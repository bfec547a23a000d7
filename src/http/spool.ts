import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { DiskStorage } from "../files/disk.ts";

/**
 * The spool folder of the server serving `dataDir`. Only that server writes there, so at its start
 * whatever is in it was left by a server that was killed mid-request.
 */
export const spoolDirOf = (dataDir: string) => join(dataDir, "spool");

/** Empties the spool folder at start-up (before listening: nothing waits on it, and node:fs/promises stays unloaded). */
export function clearSpool(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
}

/** A file part written to the spool folder while it arrived, with its size and sha256. */
export interface SpooledFile {
  path: string;
  size: number;
  sha256: string;
  stream(): ReadableStream<Uint8Array>;
}

/**
 * Temporary files of one request. Everything written through it is removed by `dispose()`, which
 * the request calls however it ends.
 */
export class Spool {
  private readonly storage: DiskStorage;
  private readonly names: string[] = [];

  constructor(private readonly dir: string) {
    this.storage = new DiskStorage(dir);
  }

  /** Writes `chunks` to a new spool file, counting and hashing them; past `maxBytes`, TooLarge and nothing kept. */
  async write(chunks: AsyncIterable<Uint8Array>, maxBytes: number): Promise<SpooledFile> {
    const name = crypto.randomUUID();
    this.names.push(name);
    const { size, sha256 } = await this.storage.put(name, chunks, {
      contentType: "application/octet-stream",
      maxBytes,
    });
    const path = join(this.dir, name);
    return { path, size, sha256, stream: () => Bun.file(path).stream() };
  }

  async dispose(): Promise<void> {
    await Promise.all(this.names.splice(0).map((name) => this.storage.delete(name)));
  }
}
