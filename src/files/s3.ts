import { Readable } from "node:stream";
import { Client, CopyDestinationOptions, CopySourceOptions } from "minio";
import { checkPath } from "./paths.ts";
import { metered, type PutOptions, type Storage, type StoredBytes, type StoredObject, TooLarge } from "./storage.ts";

export interface S3Settings {
  /** `http(s)://host[:port]` of the S3 API. */
  endPoint: string;
  region: string;
  bucket: string;
  accessKey: string;
  secretKey: string;
  /** Bytes held in memory per upload part; S3 wants at least 5 MiB for every part but the last. */
  partSize?: number;
}

const MiB = 1024 * 1024;
const DEFAULT_PART_SIZE = 8 * MiB;
const MIN_PART_SIZE = 5 * MiB;
/** S3's largest single PUT. */
const MAX_SINGLE_PUT = 5 * 1024 * MiB;
const SINGLE_PUT_EXPIRY_SECONDS = 3600;

/**
 * Files as objects in one S3 bucket, keyed by their checked path. Uploads stream: a body that fits
 * in one part is sent as a single PUT, a larger one as a multipart upload driven here part by part,
 * so memory holds at most one part. A refused or failed upload is aborted and leaves no object.
 */
export class S3Storage implements Storage {
  private readonly client: Client;
  private readonly bucket: string;
  private readonly region: string;
  private readonly partSize: number;

  constructor(settings: S3Settings) {
    const url = new URL(settings.endPoint);
    this.partSize = Math.max(settings.partSize ?? DEFAULT_PART_SIZE, MIN_PART_SIZE);
    this.bucket = settings.bucket;
    this.region = settings.region;
    this.client = new Client({
      endPoint: url.hostname.replace(/^\[(.*)\]$/, "$1"),
      port: url.port ? Number(url.port) : undefined,
      useSSL: url.protocol === "https:",
      region: settings.region,
      accessKey: settings.accessKey,
      secretKey: settings.secretKey,
      partSize: this.partSize,
    });
  }

  /** A driver whose bucket exists. */
  static async open(settings: S3Settings): Promise<S3Storage> {
    const storage = new S3Storage(settings);
    await storage.init();
    return storage;
  }

  async check(): Promise<void> {
    if (!(await this.client.bucketExists(this.bucket))) throw new Error(`bucket ${this.bucket} does not exist`);
  }

  async init(): Promise<void> {
    if (await this.client.bucketExists(this.bucket)) return;
    try {
      await this.client.makeBucket(this.bucket, this.region);
    } catch (error) {
      // Instances starting together on one bucket race to create it; the loser finds it made.
      const code = (error as { code?: string }).code;
      if (code !== "BucketAlreadyExists" && code !== "BucketAlreadyOwnedByYou") throw error;
    }
  }

  async put(path: string, body: ReadableStream<Uint8Array>, options: PutOptions): Promise<StoredObject> {
    const key = checkPath(path);
    if (options.size !== undefined && options.size > options.maxBytes) throw new TooLarge(options.maxBytes);
    if (options.size !== undefined && options.size > this.partSize && options.size <= MAX_SINGLE_PUT) {
      return this.putWhole(key, body, options as PutOptions & { size: number });
    }
    const headers = { "Content-Type": options.contentType };
    const input = metered(body, options.maxBytes);
    const upload = new PartUpload(this.client, this.bucket, key, headers);
    let pending: Uint8Array[] = [];
    let pendingBytes = 0;
    try {
      for await (const chunk of input.chunks()) {
        pending.push(chunk);
        pendingBytes += chunk.byteLength;
        if (pendingBytes >= this.partSize) {
          await upload.part(Buffer.concat(pending));
          pending = [];
          pendingBytes = 0;
        }
      }
      const rest = Buffer.concat(pending);
      if (upload.started) await upload.finish(rest);
      else await this.client.putObject(this.bucket, key, rest, rest.byteLength, headers);
    } catch (error) {
      await upload.abort();
      throw error;
    }
    return input.stored();
  }

  /**
   * A body of known length goes up as one streamed PUT (signed by URL, so the payload needs no hash
   * up front): one request instead of a part per 8 MiB, and no part held in memory. S3 and MinIO
   * never complete a PUT whose body breaks off short of its Content-Length, so the object already
   * there stays; s3rver (tests only) keeps what arrived.
   */
  private async putWhole(key: string, body: ReadableStream<Uint8Array>, options: PutOptions & { size: number }) {
    const input = metered(body, options.maxBytes);
    const url = await this.client.presignedPutObject(this.bucket, key, SINGLE_PUT_EXPIRY_SECONDS);
    const res = await fetch(url, {
      method: "PUT",
      body: input.chunks(),
      headers: { "content-type": options.contentType, "content-length": String(options.size) },
    });
    if (!res.ok) throw new Error(`the store answered ${res.status} to a PUT: ${(await res.text()).slice(0, 200)}`);
    await res.body?.cancel();
    return input.stored();
  }

  async get(path: string): Promise<StoredBytes | null> {
    const key = checkPath(path);
    try {
      const { size } = await this.client.statObject(this.bucket, key);
      const stream = await this.client.getObject(this.bucket, key);
      return { body: Readable.toWeb(stream) as ReadableStream<Uint8Array>, size };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  signPut(path: string, expiresInSeconds: number): Promise<string> {
    return this.client.presignedPutObject(this.bucket, checkPath(path), expiresInSeconds);
  }

  signGet(path: string, expiresInSeconds: number): Promise<string> {
    return this.client.presignedGetObject(this.bucket, checkPath(path), expiresInSeconds);
  }

  /** CopyObject: the store copies the bytes itself (up to 5 GiB, the largest object put here in one go). */
  async copy(from: string, to: string): Promise<boolean> {
    try {
      await this.client.copyObject(
        new CopySourceOptions({ Bucket: this.bucket, Object: checkPath(from) }),
        new CopyDestinationOptions({ Bucket: this.bucket, Object: checkPath(to) }),
      );
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  async delete(path: string): Promise<void> {
    try {
      await this.client.removeObject(this.bucket, checkPath(path));
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
}

/**
 * One multipart upload, started on its first part. minio's own putObject cannot be used for
 * streams: it buffers any body up to its part size, and beyond that first lists pending multipart
 * uploads (to resume them), which some S3 servers, s3rver among them, do not implement.
 */
class PartUpload {
  private uploadId: string | undefined;
  private readonly parts: { part: number; etag: string }[] = [];

  constructor(
    private readonly client: Client,
    private readonly bucket: string,
    private readonly key: string,
    private readonly headers: Record<string, string>,
  ) {}

  get started(): boolean {
    return this.uploadId !== undefined;
  }

  async part(bytes: Buffer): Promise<void> {
    this.uploadId ??= await this.client.initiateNewMultipartUpload(this.bucket, this.key, this.headers);
    const partNumber = this.parts.length + 1;
    const { etag } = await this.client.uploadPart(
      { bucketName: this.bucket, objectName: this.key, uploadID: this.uploadId, partNumber, headers: {} },
      bytes,
    );
    this.parts.push({ part: partNumber, etag });
  }

  async finish(last: Buffer): Promise<void> {
    if (last.byteLength > 0) await this.part(last);
    if (this.uploadId === undefined) return;
    await this.client.completeMultipartUpload(this.bucket, this.key, this.uploadId, this.parts);
    this.uploadId = undefined;
  }

  /** Drops the parts sent so far; the upload's own failure is what the caller reports. */
  async abort(): Promise<void> {
    if (this.uploadId === undefined) return;
    const uploadId = this.uploadId;
    this.uploadId = undefined;
    await this.client.abortMultipartUpload(this.bucket, this.key, uploadId).catch(() => {});
  }
}

function isNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "NotFound" || code === "NoSuchKey";
}
