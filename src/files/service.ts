import { PublicError } from "../lib/errors.ts";
import type { FileHandle, Principal } from "../sdk/index.ts";
import type { FileRow, NewFileRow } from "../store/rows.ts";
import type { Store } from "../store/store.ts";
import type { StoredFile, Upload } from "../wire/views.ts";
import { checkOwnPath, storageFor } from "./environment-storage.ts";
import { checkPath, checkPrefix } from "./paths.ts";
import { SharedBytes } from "./shared-bytes.ts";
import { grantHash, SignedUrlRefused, signGrant, verifyGrant } from "./signing.ts";
import { metered, type Storage } from "./storage.ts";

export class FileNotFound extends PublicError {
  override name = "FileNotFound";
  constructor() {
    super("file_not_found", "no such file");
  }
}

const HOUR = 3_600_000;
export const MAX_EXPIRY_MS = 7 * 24 * HOUR;

/** What a FileService is made of; `store` and `storage` are one environment's (see `fileServiceOf`). */
export interface FileSettings {
  store: Store;
  storage: Storage;
  /** Every environment's bytes: a file of a fork reads its source's until one side changes them. */
  shared: SharedBytes;
  secret: string;
  maxBytes: number;
  publicUrl: () => string;
  now?: () => number;
}

/**
 * The FileService of environment `environment`: its store view, its view of the shared storage driver
 * (environment-storage.ts), and its own public URL (the host its signed URLs name). Cheap: the driver,
 * the secret and the database are the process's. `settings.store` may be any environment's view.
 */
export function fileServiceOf(
  settings: Omit<FileSettings, "publicUrl" | "shared">,
  environment: number,
  publicUrl: () => string,
): FileService {
  return new FileService({
    ...settings,
    store: settings.store.environment(environment),
    storage: storageFor(settings.storage, environment),
    shared: new SharedBytes(settings.store, settings.storage),
    publicUrl,
  });
}

/**
 * Files for every caller of one environment: metadata and ownership in the store, bytes in the driver.
 * A user reaches the files it uploaded; a service key reaches all; anything else is "not found"
 * (existence is not leaked). Signed URLs carry their own grant, so a browser uses them without a
 * credential; a grant names the environment it was signed in, and no other takes it.
 */
export class FileService {
  constructor(private readonly $: FileSettings) {}

  private get environment() {
    return this.$.store.environmentId;
  }

  private now() {
    return (this.$.now ?? Date.now)();
  }

  /** Where `row`'s bytes are: this environment's own, or those of the environment it shares them with. */
  private bytesOf(row: FileRow): Storage {
    return this.$.shared.of(this.environment, row);
  }

  async upload(
    principal: Principal,
    path: unknown,
    contentType: string,
    body: ReadableStream<Uint8Array>,
    size?: number,
  ): Promise<StoredFile> {
    const checked = checkFilePath(path);
    const existing = await this.owned(principal, checked, true);
    await this.$.shared.beforeWrite(this.environment, checked, existing);
    const stored = await this.$.storage.put(checked, body, { contentType, maxBytes: this.$.maxBytes, size });
    return this.record(checked, contentType, stored, existing, principal);
  }

  async signUpload(principal: Principal, path: unknown, contentType: string, expiresInMs = HOUR) {
    const checked = checkFilePath(path);
    const existing = await this.owned(principal, checked, true);
    const expiresAt = this.now() + expiresInMs;
    const answer = (url: string) => ({
      url,
      method: "PUT" as const,
      headers: { "content-type": contentType },
      expiresAt: new Date(expiresAt).toISOString(),
    });
    if (this.$.storage.signPut) {
      // The bytes go straight to the store: the size and checksum are unknown until the file is next
      // asked for (see known()). The owner is recorded now: the browser carries no credential. The
      // bytes change without the server: any sharing of them with another environment ends now.
      await this.$.shared.beforeWrite(this.environment, checked, existing);
      await this.record(checked, contentType, { size: null, sha256: null }, existing, principal);
      return answer(await this.$.storage.signPut(checked, Math.ceil(expiresInMs / 1000)));
    }
    if (!existing) await this.record(checked, contentType, { size: null, sha256: null }, null, principal);
    return answer(
      `${this.$.publicUrl()}/storage/signed/${signGrant({ e: this.environment, p: checked, m: "PUT", ct: contentType, exp: expiresAt }, this.$.secret)}`,
    );
  }

  async signDownload(principal: Principal, path: unknown, expiresInMs = HOUR) {
    const checked = checkFilePath(path);
    const row = await this.owned(principal, checked, false);
    if (!row || !(await this.known(row))) throw new FileNotFound();
    const expiresAt = this.now() + expiresInMs;
    const bytes = this.bytesOf(row);
    const url = bytes.signGet
      ? await bytes.signGet(checked, Math.ceil(expiresInMs / 1000))
      : `${this.$.publicUrl()}/storage/signed/${signGrant({ e: this.environment, p: checked, m: "GET", exp: expiresAt }, this.$.secret)}`;
    return { url, expiresAt: new Date(expiresAt).toISOString() };
  }

  /**
   * The row with its size and sha256 known, or null when its file is absent. A file PUT straight to
   * the store through a presigned URL is read once here to learn them; one larger than MAX_FILE_BYTES
   * (a presigned PUT carries no size limit) is deleted and counts as absent. The row itself stays: it
   * records the owner of an upload URL that may still be used.
   */
  private async known(row: FileRow): Promise<FileRow | null> {
    if (row.size !== null) return row;
    const object = await this.bytesOf(row).get(row.path);
    if (!object) return null;
    if (object.size > this.$.maxBytes) {
      await object.body.cancel();
      if (row.blobEnvironment === null) await this.$.storage.delete(row.path);
      return null;
    }
    const reading = metered(object.body, Number.POSITIVE_INFINITY);
    for await (const _ of reading.chunks());
    const learned = { ...row, ...reading.stored(), updatedAt: this.now() };
    // Whose bytes it reads is left as it is now: a hand-over may have changed it since the row was read.
    const { blobEnvironment: _, ...sizes } = learned;
    await this.$.store.files.put(sizes);
    return learned;
  }

  /**
   * The caller's files (every owner's for a service key) whose path starts with `prefix`, in path order,
   * a page at a time after `afterPath`. Sizes of files still being uploaded through a presigned URL are
   * null: listing reads no file.
   */
  async list(
    principal: Principal,
    query: { prefix: string; afterPath?: string; limit: number },
  ): Promise<{ items: StoredFile[]; lastPath: string | null }> {
    checkPrefix(query.prefix);
    const rows = await this.$.store.files.list({
      owner: principal.kind === "service" ? undefined : principal,
      prefix: query.prefix,
      afterPath: query.afterPath,
      limit: query.limit + 1,
    });
    const more = rows.length > query.limit;
    if (more) rows.length = query.limit;
    return { items: rows.map(toFileView), lastPath: more ? (rows.at(-1)?.path ?? null) : null };
  }

  async delete(principal: Principal, path: unknown): Promise<void> {
    const checked = checkFilePath(path);
    const row = await this.owned(principal, checked, false);
    if (!row) throw new FileNotFound();
    await this.$.shared.drop(this.environment, checked, row);
  }

  /**
   * Deletes the bytes at these paths, one after another (a background sweep's pace); their records are
   * the caller's to delete, after. Bytes another environment reads are handed to it instead.
   */
  async deleteBytes(paths: string[]): Promise<void> {
    await this.$.shared.dropBytesAt(this.environment, paths);
  }

  /**
   * Stores the files sent with a new execution under `executions/<id>/<field>/<filename>`, owned by the
   * caller, and answers the handles its handler gets and the uploads as `uploadsOf` lists them.
   */
  async storeUploads(principal: Principal, executionId: string, sent: ReadonlyMap<string, SentFile>) {
    const handles: Record<string, FileHandle> = {};
    const uploads: Upload[] = [];
    for (const [field, file] of sent) {
      const filename = safeFilename(file.filename);
      const path = `executions/${executionId}/${field}/${filename}`;
      const stored = await this.$.storage.put(path, file.stream(), {
        contentType: file.contentType,
        maxBytes: this.$.maxBytes,
        size: file.size,
      });
      const now = this.now();
      const row: FileRow = {
        path,
        contentType: file.contentType,
        size: stored.size,
        sha256: stored.sha256,
        ownerKind: principal.kind,
        ownerId: principal.id,
        createdAt: now,
        updatedAt: now,
        executionId,
        field,
        filename,
        blobEnvironment: null,
      };
      await this.$.store.files.put(row);
      handles[field] = this.handle(principal, row);
      uploads.push(toUpload(row));
    }
    // In field order, as the store lists them (the fields are distinct).
    uploads.sort((a, b) => (a.field < b.field ? -1 : 1));
    return { handles, uploads };
  }

  async uploadsOf(executionIds: string[]): Promise<Map<string, Upload[]>> {
    const byExecution = new Map<string, Upload[]>();
    for (const stored of await this.$.store.files.uploadsOf(executionIds)) {
      const row = await this.known(stored);
      if (!row) continue;
      const list = byExecution.get(row.executionId ?? "") ?? [];
      list.push(toUpload(row));
      byExecution.set(row.executionId ?? "", list);
    }
    return byExecution;
  }

  private handle(principal: Principal, row: FileRow): FileHandle {
    const read = async () => {
      // The row as it is now: a hand-over may have moved its bytes since the handle was made.
      const current = (await this.$.store.files.get(row.path)) ?? row;
      const object = await this.bytesOf(current).get(row.path);
      if (!object) throw new FileNotFound();
      return object.body;
    };
    return {
      path: row.path,
      filename: row.filename ?? "",
      contentType: row.contentType,
      size: row.size ?? 0,
      text: async () => new Response(await read()).text(),
      bytes: async () => new Uint8Array(await new Response(await read()).arrayBuffer()),
      stream: () =>
        new ReadableStream<Uint8Array>({
          async start(controller) {
            for await (const chunk of await read()) controller.enqueue(chunk);
            controller.close();
          },
        }),
      signedUrl: async () => (await this.signDownload(principal, row.path)).url,
    };
  }

  /**
   * PUT to a signed upload URL: the grant's path, with the grant's content type. A grant takes one
   * upload (its use is recorded in the store, so on every instance); an upload that stores nothing
   * (refused, broken off) leaves it usable.
   */
  async signedUpload(token: string, contentType: string | null, body: ReadableStream<Uint8Array>): Promise<StoredFile> {
    const now = this.now();
    const grant = verifyGrant(token, "PUT", this.$.secret, this.environment, now);
    if (grant.ct && contentType !== grant.ct) throw new SignedContentTypeMismatch(grant.ct);
    const existing = await this.$.store.files.get(grant.p);
    if (!existing) throw new FileNotFound();
    const used = grantHash(token);
    if (!(await this.$.store.files.spendUploadGrant(used, grant.exp, now)))
      throw new SignedUrlRefused("signed_url_used");
    try {
      await this.$.shared.beforeWrite(this.environment, grant.p, existing);
      const stored = await this.$.storage.put(grant.p, body, {
        contentType: grant.ct ?? "",
        maxBytes: this.$.maxBytes,
      });
      const owner = { kind: existing.ownerKind, id: existing.ownerId };
      return await this.record(grant.p, grant.ct ?? existing.contentType, stored, existing, owner);
    } catch (error) {
      // Not given back (the database is down too): it stays used, and the browser asks for another URL.
      await this.$.store.files.refundUploadGrant(used).catch(() => {});
      throw error;
    }
  }

  /** GET of a signed download URL (as often as asked until it expires: a download changes nothing). */
  async signedDownload(token: string) {
    const grant = verifyGrant(token, "GET", this.$.secret, this.environment, this.now());
    const row = await this.$.store.files.get(grant.p);
    const object = row && (await this.bytesOf(row).get(grant.p));
    if (!row || !object) throw new FileNotFound();
    return { ...object, contentType: row.contentType };
  }

  /** The row at `path` if the caller may use it; null when there is none; FileNotFound when it is someone else's. */
  private async owned(principal: Principal, path: string, allowMissing: boolean): Promise<FileRow | null> {
    const row = await this.$.store.files.get(path);
    if (!row) {
      if (allowMissing) return null;
      throw new FileNotFound();
    }
    if (principal.kind !== "service" && (row.ownerKind !== principal.kind || row.ownerId !== principal.id)) {
      throw new FileNotFound();
    }
    return row;
  }

  private async record(
    path: string,
    contentType: string,
    stored: { size: number | null; sha256: string | null },
    existing: FileRow | null,
    owner: Principal,
  ): Promise<StoredFile> {
    const now = this.now();
    const row: NewFileRow = {
      path,
      contentType,
      size: stored.size,
      sha256: stored.sha256,
      ownerKind: existing?.ownerKind ?? owner.kind,
      ownerId: existing?.ownerId ?? owner.id,
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
      // Written at this environment's own key (after SharedBytes.beforeWrite).
      blobEnvironment: null,
    };
    await this.$.store.files.put(row);
    return toFileView(row);
  }
}

/** A file part of a multipart invocation, as received. */
export interface SentFile {
  filename: string;
  contentType: string;
  size: number;
  sha256: string;
  stream(): ReadableStream<Uint8Array>;
}

export const toUpload = (row: FileRow): Upload => ({
  field: row.field ?? "",
  path: row.path,
  filename: row.filename ?? "",
  contentType: row.contentType,
  size: row.size ?? 0,
});

export class SignedContentTypeMismatch extends PublicError {
  override name = "SignedContentTypeMismatch";
  constructor(expected: string) {
    super("signed_url_invalid", `this URL takes content-type ${expected}`);
  }
}

/** A caller's path: valid (paths.ts), and not in the folder other environments' bytes are kept in. */
const checkFilePath = (path: unknown) => checkOwnPath(checkPath(path));

/** A sent filename reduced to one safe path segment. */
function safeFilename(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? "";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const cleaned = base.replace(/[\u0000-\u001f\u007f]/g, "").slice(0, 200);
  return cleaned === "" || cleaned === "." || cleaned === ".." ? "file" : cleaned;
}

export const toFileView = (row: NewFileRow): StoredFile => ({
  path: row.path,
  contentType: row.contentType,
  size: row.size,
  sha256: row.sha256,
  owner: { kind: row.ownerKind, id: row.ownerId },
  createdAt: new Date(row.createdAt).toISOString(),
  updatedAt: new Date(row.updatedAt).toISOString(),
});
