import { constants } from "node:fs";
import { dirname, join } from "node:path";
import { checkPath } from "./paths.ts";
import { metered, type PutOptions, type Storage, type StoredBytes, type StoredObject } from "./storage.ts";

/** Written to the file in pieces of this size: fewer, larger writes. */
const WRITE_BUFFER = 1024 * 1024;

/**
 * Files under one root folder. Writes go to a temporary file beside the target and are renamed in
 * place, so a reader never sees half a file and a refused upload leaves nothing.
 */
let fsPromises: Promise<typeof import("node:fs/promises")> | null = null;
/** node:fs/promises, loaded by the first file operation: at start it cost ~1.5 MiB from source (issue 14). */
const fsp = () => {
  fsPromises ??= import("node:fs/promises");
  return fsPromises;
};

export class DiskStorage implements Storage {
  constructor(private readonly root: string) {}

  async check(): Promise<void> {
    const { access, mkdir } = await fsp();
    await mkdir(this.root, { recursive: true });
    await access(this.root, constants.W_OK);
  }

  /** Takes any byte iterable too (a spool writes a multipart file part through here). */
  async put(path: string, body: AsyncIterable<Uint8Array>, options: PutOptions): Promise<StoredObject> {
    const target = this.resolve(path);
    const { mkdir, rename, rm } = await fsp();
    await mkdir(dirname(target), { recursive: true });
    const temporary = `${target}.${crypto.randomUUID()}.part`;
    const out = Bun.file(temporary).writer({ highWaterMark: WRITE_BUFFER });
    const input = metered(body, options.maxBytes);
    try {
      for await (const chunk of input.chunks()) await out.write(chunk);
      await out.end();
      await rename(temporary, target);
    } catch (error) {
      await Promise.resolve(out.end()).catch(() => {});
      await rm(temporary, { force: true });
      throw error;
    }
    return input.stored();
  }

  async get(path: string): Promise<StoredBytes | null> {
    const target = this.resolve(path);
    const { stat } = await fsp();
    const size = await stat(target).then(
      (found) => (found.isFile() ? found.size : null),
      () => null,
    );
    if (size === null) return null;
    const file = Bun.file(target);
    return { body: file.stream(), size, file };
  }

  async delete(path: string): Promise<void> {
    await (await fsp()).rm(this.resolve(path), { force: true });
  }

  private resolve(path: string): string {
    return join(this.root, checkPath(path));
  }
}
