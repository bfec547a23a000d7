import { mkdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TooLarge } from "./storage.ts";

/** One process's spool folder; a folder per process so two servers never remove each other's files. */
export const spoolDir = join(tmpdir(), `actuate-spool-${process.pid}`);

const WRITE_BUFFER = 1024 * 1024;

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
  private readonly paths: string[] = [];

  constructor(private readonly dir = spoolDir) {}

  /** Writes `chunks` to a new spool file, counting and hashing them; past `maxBytes`, TooLarge. */
  async write(chunks: AsyncIterable<Uint8Array>, maxBytes: number): Promise<SpooledFile> {
    await mkdir(this.dir, { recursive: true });
    const path = join(this.dir, crypto.randomUUID());
    this.paths.push(path);
    const out = Bun.file(path).writer({ highWaterMark: WRITE_BUFFER });
    const hash = new Bun.CryptoHasher("sha256");
    let size = 0;
    try {
      for await (const chunk of chunks) {
        size += chunk.byteLength;
        if (size > maxBytes) throw new TooLarge(maxBytes);
        hash.update(chunk);
        await out.write(chunk);
      }
      await out.end();
    } catch (error) {
      await Promise.resolve(out.end()).catch(() => {});
      throw error;
    }
    return { path, size, sha256: hash.digest("hex"), stream: () => Bun.file(path).stream() };
  }

  async dispose(): Promise<void> {
    await Promise.all(this.paths.splice(0).map((path) => rm(path, { force: true })));
  }
}
