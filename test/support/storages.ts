import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
// @ts-expect-error s3rver ships no types; the little used here is typed below
import S3rverModule from "s3rver";
import type { Config } from "../../src/config.ts";
import { DiskStorage } from "../../src/files/disk.ts";
import { S3Storage } from "../../src/files/s3.ts";

interface S3rverInstance {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
}
const S3rver = S3rverModule as new (options: Record<string, unknown>) => S3rverInstance;

export const S3_KEY = "S3RVER";

/** A bucket s3rver creates with the CORS rule docs/decisions/files.md asks operators to set, for this origin. */
export const S3_CORS_BUCKET = "actuate-cors";
export const S3_CORS_ORIGIN = "https://app.example.com";
const S3_CORS_RULE = `<CORSConfiguration>
  <CORSRule>
    <AllowedOrigin>${S3_CORS_ORIGIN}</AllowedOrigin>
    <AllowedMethod>GET</AllowedMethod>
    <AllowedMethod>PUT</AllowedMethod>
    <AllowedHeader>content-type</AllowedHeader>
    <ExposeHeader>ETag</ExposeHeader>
    <MaxAgeSeconds>3600</MaxAgeSeconds>
  </CORSRule>
</CORSConfiguration>`;

/** One s3rver on a loopback port, shared by the suites of a test file while any of them holds it. */
let s3rver: { endPoint: Promise<string>; close(): Promise<void> } | undefined;
let holders = 0;

/** Starts (or shares) the s3rver; answers its endpoint. Pair with `releaseS3rver()`. */
export async function holdS3rver(): Promise<string> {
  holders++;
  if (!s3rver) {
    const directory = mkdtempSync(join(tmpdir(), "actuate-s3-"));
    const instance = new S3rver({
      port: 0,
      address: "127.0.0.1",
      silent: true,
      directory,
      configureBuckets: [{ name: S3_CORS_BUCKET, configs: [S3_CORS_RULE] }],
    });
    s3rver = {
      endPoint: instance.run().then(({ port }) => `http://127.0.0.1:${port}`),
      async close() {
        await instance.close();
        rmSync(directory, { recursive: true, force: true });
      },
    };
  }
  return s3rver.endPoint;
}

export async function releaseS3rver(): Promise<void> {
  if (--holders > 0 || !s3rver) return;
  const closing = s3rver;
  s3rver = undefined;
  await closing.close();
}

/** A storage driver a server under test can use: its settings, and the way to let it go. */
export interface TestStorage {
  name: "disk" | "s3";
  env(): Promise<Record<string, string>>;
  release(): Promise<void>;
}

const disk: TestStorage = { name: "disk", env: async () => ({}), release: async () => {} };

export const s3: TestStorage = {
  name: "s3",
  env: async () => ({
    STORAGE: "s3",
    S3_ENDPOINT: await holdS3rver(),
    S3_BUCKET: `actuate-${crypto.randomUUID().slice(0, 8)}`,
    S3_ACCESS_KEY: S3_KEY,
    S3_SECRET_KEY: S3_KEY,
  }),
  release: releaseS3rver,
};

/** Every suite that touches files runs on both drivers (the S3 one against s3rver). */
export const storages: TestStorage[] = [disk, s3];

/** The driver a server was configured with, opened beside it, to look at the stored bytes directly. */
export const driverOf = (config: Config) =>
  config.storage.driver === "s3" ? new S3Storage(config.storage) : new DiskStorage(config.storage.root);

/** The stored bytes at `path` as text, or null when the store has no such file. */
export async function storedText(config: Config, path: string): Promise<string | null> {
  const found = await driverOf(config).get(path);
  return found ? new Response(found.body).text() : null;
}
