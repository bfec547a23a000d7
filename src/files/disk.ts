import { constants } from "node:fs";
import { resolve as absolute, dirname, join } from "node:path";
import { checkPath, InvalidPath } from "./paths.ts";
import { metered, type PutOptions, type Storage, type StoredBytes, type StoredObject } from "./storage.ts";

/** Written to the file in pieces of this size: fewer, larger writes. */
const WRITE_BUFFER = 1024 * 1024;

let fsPromises: Promise<typeof import("node:fs/promises")> | null = null;
/** node:fs/promises, loaded by the first file operation: at start it cost ~1.5 MiB from source (issue 14). */
const fsp = () => {
  fsPromises ??= import("node:fs/promises");
  return fsPromises;
};

/**
 * Files under one root folder. Writes go to a temporary file beside the target and are renamed in
 * place, so a reader never sees half a file and a refused upload leaves nothing. A delete removes the
 * folders it leaves empty (an execution's uploads leave two each), so nothing of a file stays.
 */
export class DiskStorage implements Storage {
  /** Absolute and normalized: a delete climbs the folders of a file up to it, and no further. */
  private readonly root: string;

  constructor(root: string) {
    this.root = absolute(root);
  }

  async check(): Promise<void> {
    const { access, mkdir } = await fsp();
    await mkdir(this.root, { recursive: true });
    await access(this.root, constants.W_OK);
  }

  /** Takes any byte iterable too (a spool writes a multipart file part through here). */
  async put(path: string, body: AsyncIterable<Uint8Array>, options: PutOptions): Promise<StoredObject> {
    const target = this.resolve(path);
    const { rename, rm } = await fsp();
    const temporary = `${target}.${crypto.randomUUID()}.part`;
    const out = await this.openBeside(temporary).catch((error) => {
      throw clashOr(error, path);
    });
    const input = metered(body, options.maxBytes);
    try {
      for await (const chunk of input.chunks()) await out.write(chunk);
      await out.end();
      await rename(temporary, target);
    } catch (error) {
      await Promise.resolve(out.end()).catch(() => {});
      await rm(temporary, { force: true });
      throw clashOr(error, path);
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
    const target = this.resolve(path);
    const { rm, rmdir } = await fsp();
    await rm(target, { force: true });
    for (let folder = dirname(target); folder !== this.root; folder = dirname(folder)) {
      try {
        await rmdir(folder);
      } catch {
        // It still holds something (or is gone already): so do the folders above it.
        break;
      }
    }
  }

  /**
   * A hard link: the two paths name one file until either is written (a write renames a new file into
   * place) or deleted, so nothing is copied. A file system without hard links gets a copy.
   */
  async copy(from: string, to: string): Promise<boolean> {
    const source = this.resolve(from);
    const target = this.resolve(to);
    const { copyFile, link, rename, rm, stat } = await fsp();
    const isFile = () =>
      stat(source).then(
        (found) => found.isFile(),
        () => false,
      );
    if (!(await isFile())) return false;
    const temporary = `${target}.${crypto.randomUUID()}.part`;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.folderOf(temporary, to);
        await link(source, temporary).catch((error: NodeJS.ErrnoException) => {
          if (error.code === "ENOENT") throw error;
          return copyFile(source, temporary);
        });
        break;
      } catch (error) {
        // ENOENT: the source went (nothing to copy), or the new folder did (a delete emptied it).
        if ((error as NodeJS.ErrnoException).code !== "ENOENT" || !(await isFile())) return false;
        if (attempt === 3) throw error;
      }
    }
    try {
      await rename(temporary, target);
    } catch (error) {
      await rm(temporary, { force: true });
      throw clashOr(error, to);
    }
    return true;
  }

  /** Creates the folders of `file`, the caller's `path`. */
  private async folderOf(file: string, path: string): Promise<void> {
    const { mkdir } = await fsp();
    await mkdir(dirname(file), { recursive: true }).catch((error) => {
      throw clashOr(error, path);
    });
  }

  /**
   * Creates `file` and its folders. The file holds its folder from then on; before, a delete may
   * remove the folder, emptied, so that is tried again.
   */
  private async openBeside(file: string) {
    const { mkdir } = await fsp();
    for (let attempt = 1; ; attempt++) {
      try {
        await mkdir(dirname(file), { recursive: true });
        return Bun.file(file).writer({ highWaterMark: WRITE_BUFFER });
      } catch (error) {
        // ENOENT: the folder went before the file was created; EEXIST: mkdir saw it, then found it gone.
        const code = (error as NodeJS.ErrnoException).code;
        if ((code !== "ENOENT" && code !== "EEXIST") || attempt === 3) throw error;
      }
    }
  }

  private resolve(path: string): string {
    return join(this.root, checkPath(path));
  }
}

/**
 * A folder cannot be a file on disk (keys of a bucket can): a path that runs through a stored file
 * (`a.txt/b`: ENOTDIR, or EEXIST from mkdir) or names a folder of stored files (`a` beside `a/b`:
 * EISDIR) is the caller's path, refused, not the server's failure.
 */
function clashOr(error: unknown, path: string): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== "ENOTDIR" && code !== "EEXIST" && code !== "EISDIR") return error;
  return new InvalidPath(
    `${path} cannot be stored: on disk storage a path cannot be both a file and a folder of files`,
  );
}
