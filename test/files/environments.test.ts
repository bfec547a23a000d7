import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DiskStorage } from "../../src/files/disk.ts";
import { storageFor } from "../../src/files/environment-storage.ts";
import { InvalidPath } from "../../src/files/paths.ts";
import { S3Storage } from "../../src/files/s3.ts";
import { type FileService, fileServiceOf } from "../../src/files/service.ts";
import { SignedUrlRefused } from "../../src/files/signing.ts";
import type { Storage } from "../../src/files/storage.ts";
import type { Principal } from "../../src/sdk/index.ts";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { executeStatements } from "../support/databases.ts";
import { holdS3rver, releaseS3rver, S3_KEY } from "../support/storages.ts";

const scratch = mkdtempSync(join(tmpdir(), "actuate-environments-"));
let endPoint: string;
beforeAll(async () => {
  endPoint = await holdS3rver();
});
afterAll(async () => {
  await releaseS3rver();
  rmSync(scratch, { recursive: true, force: true });
});

const options = { contentType: "text/plain", maxBytes: 1024 };
const body = (text: string) => new Blob([text]).stream();
const text = async (storage: Storage, path: string) => {
  const found = await storage.get(path);
  return found ? new Response(found.body).text() : null;
};

/** What every driver's views promise: the same path in two environments is two files' bytes. */
function sharedDriverRules(driver: () => Storage) {
  test("the same path holds each environment's own bytes; a delete in one leaves the other's", async () => {
    const one = storageFor(driver(), 1);
    const two = storageFor(driver(), 2);
    const three = storageFor(driver(), 3);
    await one.put("reports/q1.txt", body("one's"), options);
    await two.put("reports/q1.txt", body("two's"), options);
    expect(await text(one, "reports/q1.txt")).toBe("one's");
    expect(await text(two, "reports/q1.txt")).toBe("two's");
    expect(await text(three, "reports/q1.txt")).toBeNull();
    // Environment 1's keys are the driver's own: a single-mode database's bytes stay where they were.
    expect(await text(driver(), "reports/q1.txt")).toBe("one's");
    expect(await text(driver(), "environments/2/reports/q1.txt")).toBe("two's");

    await two.delete("reports/q1.txt");
    expect(await text(two, "reports/q1.txt")).toBeNull();
    expect(await text(one, "reports/q1.txt")).toBe("one's");
    await one.delete("reports/q1.txt");
    expect(await text(one, "reports/q1.txt")).toBeNull();
  });

  test("no environment's path reaches the folder other environments are kept in", async () => {
    for (const environment of [1, 2]) {
      const view = storageFor(driver(), environment);
      await expect(view.put("environments/2/reports/q1.txt", body("x"), options)).rejects.toThrow(InvalidPath);
      await expect(view.get("environments")).rejects.toThrow(InvalidPath);
      await expect(view.delete("environments/3/a")).rejects.toThrow(InvalidPath);
    }
  });
}

describe("environments' views of a disk", () => {
  const root = join(scratch, "disk");
  sharedDriverRules(() => new DiskStorage(root));

  test("another environment's bytes are a folder inside the root", async () => {
    await storageFor(new DiskStorage(root), 7).put("a/b.txt", body("seven"), options);
    expect(readFileSync(join(root, "environments", "7", "a", "b.txt"), "utf8")).toBe("seven");
    await storageFor(new DiskStorage(root), 7).delete("a/b.txt");
    // Its delete climbs the emptied folders up to the root, the environment's folder included.
    expect(existsSync(join(root, "environments"))).toBe(false);
  });
});

describe("environments' views of an S3 bucket", () => {
  let s3: S3Storage;
  beforeAll(async () => {
    const bucket = `actuate-envs-${crypto.randomUUID().slice(0, 8)}`;
    s3 = await S3Storage.open({ endPoint, region: "us-east-1", bucket, accessKey: S3_KEY, secretKey: S3_KEY });
  });
  sharedDriverRules(() => s3);

  test("presigned URLs put and get the bytes of the environment they were signed in", async () => {
    const one = storageFor(s3, 1);
    const two = storageFor(s3, 2);
    await one.put("photo.txt", body("one's"), options);
    const put = await fetch(await (two.signPut?.("photo.txt", 60) ?? ""), {
      method: "PUT",
      body: "two's, by URL",
      headers: { "content-type": "text/plain" },
    });
    expect(put.ok).toBe(true);
    expect(await text(two, "photo.txt")).toBe("two's, by URL");
    expect(await text(one, "photo.txt")).toBe("one's");
    const get = await fetch(await (two.signGet?.("photo.txt", 60) ?? ""));
    expect(await get.text()).toBe("two's, by URL");
    expect(await (await fetch(await (one.signGet?.("photo.txt", 60) ?? ""))).text()).toBe("one's");
  });
});

describe("FileService per environment", () => {
  let store: Store;
  let one: FileService;
  let two: FileService;
  const alice: Principal = { kind: "user", id: "alice" };
  const tokenOf = (url: string) => url.slice(url.indexOf("/storage/signed/") + "/storage/signed/".length);

  beforeAll(async () => {
    const url = `sqlite:${join(scratch, "files.db")}`;
    store = await openStore(url);
    await executeStatements(
      url,
      "insert into environments (id, handle, revision, updated_at, created_at, changed) values (2, 'two', 0, 0, 0, 0)",
    );
    const settings = { store, storage: new DiskStorage(join(scratch, "service")), secret: "s", maxBytes: 1024 };
    one = fileServiceOf(settings, 1, () => "https://one.example");
    two = fileServiceOf(settings, 2, () => "https://two.example");
  });
  afterAll(() => store.close());

  test("the same path is two files; a URL signed in one environment is refused in the other", async () => {
    await one.upload(alice, "notes/a.txt", "text/plain", body("one's"));
    await two.upload(alice, "notes/a.txt", "text/plain", body("two's"));
    expect((await one.list(alice, { prefix: "", limit: 10 })).items.map((f) => f.size)).toEqual([5]);

    const download = await two.signDownload(alice, "notes/a.txt");
    expect(download.url).toStartWith("https://two.example/storage/signed/");
    await expect(one.signedDownload(tokenOf(download.url))).rejects.toThrow(SignedUrlRefused);
    expect(await new Response((await two.signedDownload(tokenOf(download.url))).body).text()).toBe("two's");

    const upload = await one.signUpload(alice, "notes/a.txt", "text/plain");
    await expect(two.signedUpload(tokenOf(upload.url), "text/plain", body("stolen"))).rejects.toThrow(
      "this signed URL is not valid",
    );
    await one.signedUpload(tokenOf(upload.url), "text/plain", body("one's, again"));
    const read = async (files: FileService) =>
      new Response(
        (await files.signedDownload(tokenOf((await files.signDownload(alice, "notes/a.txt")).url))).body,
      ).text();
    expect(await read(one)).toBe("one's, again");
    expect(await read(two)).toBe("two's");

    await two.delete(alice, "notes/a.txt");
    expect(await read(one)).toBe("one's, again");
    await expect(two.signDownload(alice, "notes/a.txt")).rejects.toThrow("no such file");
  });

  test("a caller's path in the environments' folder is refused before anything is recorded", async () => {
    await expect(one.signUpload(alice, "environments/2/notes/a.txt", "text/plain")).rejects.toThrow(InvalidPath);
    expect(await store.files.get("environments/2/notes/a.txt")).toBeNull();
  });
});
