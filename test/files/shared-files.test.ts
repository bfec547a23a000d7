import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "minio";
import { deleteEnvironment } from "../../src/engine/control/delete-environment.ts";
import { DiskStorage } from "../../src/files/disk.ts";
import { S3Storage } from "../../src/files/s3.ts";
import { type FileService, fileServiceOf } from "../../src/files/service.ts";
import type { Storage } from "../../src/files/storage.ts";
import type { Principal } from "../../src/sdk/index.ts";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";
import { holdS3rver, releaseS3rver, S3_KEY } from "../support/storages.ts";

/**
 * Files a fork shares with its source (docs/decisions/shared-files.md): no byte copied at fork time, each
 * side's writes and deletes never seen by the other, on both databases and both drivers.
 */

const scratch = mkdtempSync(join(tmpdir(), "actuate-shared-files-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const service: Principal = { kind: "service", id: "key" };
const body = (text: string) => new Blob([text]).stream();
const tokenOf = (url: string) => url.slice(url.indexOf("/storage/signed/") + "/storage/signed/".length);

/** A driver under test, and a count of the objects it holds (every environment's). */
interface Driver {
  name: string;
  open(): Promise<{ storage: Storage; objects(): Promise<number> }>;
  close(): Promise<void>;
}

const disk: Driver = {
  name: "disk",
  async open() {
    const root = mkdtempSync(join(scratch, "disk-"));
    const objects = async () =>
      readdirSync(root, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).length;
    return { storage: new DiskStorage(root), objects };
  },
  close: async () => {},
};

const s3: Driver = {
  name: "s3",
  async open() {
    const endPoint = await holdS3rver();
    const bucket = `actuate-shared-${crypto.randomUUID().slice(0, 8)}`;
    const storage = await S3Storage.open({
      endPoint,
      region: "us-east-1",
      bucket,
      accessKey: S3_KEY,
      secretKey: S3_KEY,
    });
    const url = new URL(endPoint);
    const client = new Client({
      endPoint: url.hostname,
      port: Number(url.port),
      useSSL: false,
      region: "us-east-1",
      accessKey: S3_KEY,
      secretKey: S3_KEY,
    });
    const objects = async () => {
      let n = 0;
      for await (const _ of client.listObjectsV2(bucket, "", true)) n++;
      return n;
    };
    return { storage, objects };
  },
  close: releaseS3rver,
};

describe("Storage.copy on disk", () => {
  test("a hard link: the same file until one side is written, which leaves the other as it was", async () => {
    const root = mkdtempSync(join(scratch, "copy-"));
    const disk = new DiskStorage(root);
    const options = { contentType: "text/plain", maxBytes: 1024 };
    await disk.put("a/one.txt", body("first"), options);
    expect(await disk.copy("a/one.txt", "environments/2/a/one.txt")).toBe(true);
    const [from, to] = [join(root, "a/one.txt"), join(root, "environments/2/a/one.txt")];
    expect(statSync(to).ino).toBe(statSync(from).ino);
    await disk.put("a/one.txt", body("second"), options);
    expect(readFileSync(to, "utf8")).toBe("first");
    expect(readFileSync(from, "utf8")).toBe("second");
    // Over bytes already there, and from nothing (false, nothing made).
    expect(await disk.copy("a/one.txt", "environments/2/a/one.txt")).toBe(true);
    expect(readFileSync(to, "utf8")).toBe("second");
    expect(await disk.copy("a/none.txt", "environments/2/a/none.txt")).toBe(false);
    expect(readdirSync(join(root, "environments/2/a"))).toEqual(["one.txt"]);
  });
});

for (const dialect of dialects) {
  for (const driver of [disk, s3]) {
    describe(`files shared with a fork (${dialect.name}, ${driver.name})`, () => {
      let database: TestDatabase;
      let store: Store;
      let storage: Storage;
      let objects: () => Promise<number>;
      let organization: number;
      let environments = 0;

      beforeAll(async () => {
        database = await dialect.create();
        store = await openStore(database.url);
        ({ storage, objects } = await driver.open());
        organization = (await store.control.organizations.create("acme", 0)).id;
      });
      afterAll(async () => {
        await store.close();
        await database.drop();
        await driver.close();
      });

      const filesOf = (environment: number): FileService =>
        fileServiceOf(
          { store, storage, secret: "secret", maxBytes: 1024 * 1024 },
          environment,
          () => `https://env-${environment}.example`,
        );

      const newEnvironment = async () =>
        (await store.control.environments.create(`env-${++environments}`, organization, 0)).id;

      /** `env fork --data`: the store's fork (its file rows read the source's bytes), nothing of storage. */
      const fork = async (source: number) => {
        const handle = `env-${++environments}`;
        const target = { handle, organization, at: 0, data: true, secrets: false, expiresAt: null };
        const { environment } = await store.control.environments.fork(source, target);
        return environment.id;
      };

      /** The file's text as a browser gets it: through a signed download URL (ours, or the store's). */
      const read = async (environment: number, path: string): Promise<string | null> => {
        const files = filesOf(environment);
        const signed = await files.signDownload(service, path).catch(() => null);
        if (!signed) return null;
        if (signed.url.includes("/storage/signed/")) {
          const file = await files.signedDownload(tokenOf(signed.url)).catch(() => null);
          return file ? new Response(file.body).text() : null;
        }
        const response = await fetch(signed.url);
        return response.ok ? response.text() : null;
      };

      const write = (environment: number, path: string, text: string) =>
        filesOf(environment).upload(service, path, "text/plain", body(text));

      /** Puts through an upload URL: the server's own (disk), or the store's presigned one (S3). */
      const putSigned = async (environment: number, text: string, url: string) => {
        if (url.includes("/storage/signed/")) {
          await filesOf(environment).signedUpload(tokenOf(url), "text/plain", body(text));
          return;
        }
        const response = await fetch(url, { method: "PUT", body: text, headers: { "content-type": "text/plain" } });
        expect(response.ok).toBe(true);
      };

      test("a fork reads its source's bytes, none copied; a source overwrite hands the old ones to the fork", async () => {
        const source = await newEnvironment();
        await write(source, "reports/q1.txt", "source v1");
        await write(source, "reports/q2.txt", "only in source");
        const before = await objects();
        const forked = await fork(source);
        expect(await objects()).toBe(before);
        expect(await read(forked, "reports/q1.txt")).toBe("source v1");
        expect(await read(forked, "reports/q2.txt")).toBe("only in source");

        await write(source, "reports/q1.txt", "source v2");
        expect(await read(source, "reports/q1.txt")).toBe("source v2");
        expect(await read(forked, "reports/q1.txt")).toBe("source v1");
        // The fork owns the old bytes now; the file nobody changed is still shared.
        expect((await store.environment(forked).files.get("reports/q1.txt"))?.blobEnvironment).toBeNull();
        expect((await store.environment(forked).files.get("reports/q2.txt"))?.blobEnvironment).toBe(source);
        expect(await objects()).toBe(before + 1);
      });

      test("a fork's overwrite and delete leave the source as it was", async () => {
        const source = await newEnvironment();
        await write(source, "a.txt", "source's");
        await write(source, "b.txt", "source's b");
        const forked = await fork(source);
        await write(forked, "a.txt", "fork's");
        expect(await read(forked, "a.txt")).toBe("fork's");
        expect(await read(source, "a.txt")).toBe("source's");
        await filesOf(forked).delete(service, "b.txt");
        expect(await read(forked, "b.txt")).toBeNull();
        expect(await read(source, "b.txt")).toBe("source's b");
        await filesOf(forked).delete(service, "a.txt");
        expect(await read(source, "a.txt")).toBe("source's");
      });

      test("a source's delete leaves the fork whole, and drops the bytes once nobody reads them", async () => {
        const source = await newEnvironment();
        await write(source, "c.txt", "shared");
        const before = await objects();
        const forked = await fork(source);
        await filesOf(source).delete(service, "c.txt");
        expect(await read(source, "c.txt")).toBeNull();
        expect(await read(forked, "c.txt")).toBe("shared");
        // Handed over (copied to the fork, the source's copy deleted): one object, as before.
        expect(await objects()).toBe(before);
        await filesOf(forked).delete(service, "c.txt");
        expect(await objects()).toBe(before - 1);
      });

      test("deleting the source environment leaves its forks whole, a fork of a fork included", async () => {
        const source = await newEnvironment();
        await write(source, "d.txt", "from source");
        await write(source, "e.txt", "e from source");
        const first = await fork(source);
        const second = await fork(first);
        expect((await store.environment(second).files.get("d.txt"))?.blobEnvironment).toBe(source);
        await write(first, "e.txt", "e from first");
        const third = await fork(first);
        expect((await store.environment(third).files.get("e.txt"))?.blobEnvironment).toBe(first);

        expect(await deleteEnvironment(store, storage, source)).not.toBeNull();
        for (const id of [first, second, third]) expect(await read(id, "d.txt")).toBe("from source");
        expect(await read(second, "e.txt")).toBe("e from source");
        expect(await read(third, "e.txt")).toBe("e from first");

        // The fork that got the bytes hands them on again when it deletes them itself.
        expect(await deleteEnvironment(store, storage, first)).not.toBeNull();
        expect(await read(second, "d.txt")).toBe("from source");
        expect(await read(third, "d.txt")).toBe("from source");
        expect(await read(third, "e.txt")).toBe("e from first");
        await write(third, "d.txt", "third's");
        expect(await read(second, "d.txt")).toBe("from source");
        expect(await read(third, "d.txt")).toBe("third's");
      });

      test("a fork of a fork: the first's write is handed to none but itself, the source's to both", async () => {
        const source = await newEnvironment();
        await write(source, "f.txt", "v1");
        const first = await fork(source);
        const second = await fork(first);
        await write(source, "f.txt", "v2");
        expect([await read(source, "f.txt"), await read(first, "f.txt"), await read(second, "f.txt")]).toEqual([
          "v2",
          "v1",
          "v1",
        ]);
        await write(first, "f.txt", "first's");
        expect([await read(source, "f.txt"), await read(first, "f.txt"), await read(second, "f.txt")]).toEqual([
          "v2",
          "first's",
          "v1",
        ]);
      });

      test("an upload URL signed in the source hands the bytes over before the browser puts", async () => {
        const source = await newEnvironment();
        await write(source, "photo.txt", "old photo");
        const forked = await fork(source);
        const upload = await filesOf(source).signUpload(service, "photo.txt", "text/plain");
        await putSigned(source, "new photo", upload.url);
        expect(await read(source, "photo.txt")).toBe("new photo");
        expect(await read(forked, "photo.txt")).toBe("old photo");

        const forkUpload = await filesOf(forked).signUpload(service, "photo.txt", "text/plain");
        await putSigned(forked, "fork's photo", forkUpload.url);
        expect(await read(forked, "photo.txt")).toBe("fork's photo");
        expect(await read(source, "photo.txt")).toBe("new photo");
      });

      test("retention's drop of a source upload's bytes leaves the fork's copy readable", async () => {
        const source = await newEnvironment();
        await write(source, "executions/x1/doc/a.txt", "an upload");
        const forked = await fork(source);
        await filesOf(source).deleteBytes(["executions/x1/doc/a.txt"]);
        await store.environment(source).files.delete("executions/x1/doc/a.txt");
        expect(await read(forked, "executions/x1/doc/a.txt")).toBe("an upload");
      });

      test("environment 1 (single mode's keys, no prefix) as a source: its fork reads and keeps its bytes", async () => {
        await write(1, "single/h.txt", "single's");
        const forked = await fork(1);
        await write(1, "single/h.txt", "single's v2");
        expect(await read(forked, "single/h.txt")).toBe("single's");
        expect(await read(1, "single/h.txt")).toBe("single's v2");
      });

      test("a source upload deleted: the fork keeps its bytes, the source's handle finds none", async () => {
        const source = await newEnvironment();
        const { handles } = await filesOf(source).storeUploads(
          service,
          "x2",
          new Map([
            ["doc", { filename: "a.txt", contentType: "text/plain", size: 3, sha256: "", stream: () => body("one") }],
          ]),
        );
        const forked = await fork(source);
        const forkRow = await store.environment(forked).files.get("executions/x2/doc/a.txt");
        expect(forkRow?.blobEnvironment).toBe(source);
        await filesOf(source).delete(service, "executions/x2/doc/a.txt");
        expect(await read(forked, "executions/x2/doc/a.txt")).toBe("one");
        // The source's handle: its row is gone, its bytes with it (handed to the fork).
        await expect(handles.doc?.text() ?? Promise.resolve("")).rejects.toThrow("no such file");
      });

      test("the store: readers of a path, a hand-over conditioned on its target still reading, owning a copy", async () => {
        const [owner, first, second, third] = [
          await newEnvironment(),
          await newEnvironment(),
          await newEnvironment(),
          await newEnvironment(),
        ];
        const row = {
          path: "s.txt",
          contentType: "text/plain",
          size: 1,
          sha256: "x",
          ownerKind: "service" as const,
          ownerId: "key",
          createdAt: 0,
          updatedAt: 0,
        };
        await store.environment(owner).files.put({ ...row, blobEnvironment: null });
        for (const id of [first, second, third]) {
          await store.environment(id).files.put({ ...row, blobEnvironment: owner });
        }
        await store.environment(first).files.put({ ...row, path: "other.txt", blobEnvironment: owner });
        const files = store.environment(owner).files;
        const blob = async (id: number) => (await store.environment(id).files.get("s.txt"))?.blobEnvironment;
        expect(await files.referencing("s.txt")).toEqual([first, second, third]);

        // `second` took its own copy meanwhile: the hand-over to it changes nothing.
        expect(await store.environment(second).files.ownBytes("s.txt", owner)).toBe(true);
        expect(await store.environment(second).files.ownBytes("s.txt", owner)).toBe(false);
        expect(await files.handOver("s.txt", second)).toBe(false);
        expect([await blob(first), await blob(third)]).toEqual([owner, owner]);

        expect(await files.handOver("s.txt", first)).toBe(true);
        expect([await blob(owner), await blob(first), await blob(second), await blob(third)]).toEqual([
          null,
          null,
          null,
          first,
        ]);
        expect(await files.referencing("s.txt")).toEqual([]);
        expect(await store.environment(first).files.referencing("s.txt")).toEqual([third]);
        // Only that path: the other file of `first` still reads the owner's bytes.
        expect((await store.environment(first).files.get("other.txt"))?.blobEnvironment).toBe(owner);
      });

      test("a lease on shared bytes is one holder's until released or run out", async () => {
        const files = store.environment(await newEnvironment()).files;
        expect(await files.leaseBytes("l.txt", 1000, 2000)).toBe(true);
        expect(await files.leaseBytes("l.txt", 1500, 2500)).toBe(false);
        expect(await files.leaseBytes("other.txt", 1500, 2500)).toBe(true);
        // Its holder died: past its end it is taken over.
        expect(await files.leaseBytes("l.txt", 2001, 3000)).toBe(true);
        await files.releaseBytes("l.txt");
        expect(await files.leaseBytes("l.txt", 2002, 3000)).toBe(true);
      });

      test("writers at once on both sides lose no bytes", async () => {
        // Rounds, so that the orders in which the hand-overs meet vary.
        for (let round = 0; round < 5; round++) {
          const path = `g${round}.txt`;
          const source = await newEnvironment();
          await write(source, path, "original");
          const forks = [await fork(source), await fork(source), await fork(source), await fork(source)];
          const [zero, one, two, three] = forks as [number, number, number, number];
          await Promise.all([
            write(source, path, "source A"),
            write(source, path, "source B"),
            write(zero, path, "fork 0's"),
            filesOf(one).delete(service, path),
            write(three, path, "fork 3's"),
          ]);
          // s3rver alone, given two PUTs of one key at once, at times keeps an empty object (5 of 200 tries,
          // with no fork involved); S3 and MinIO keep one of them whole. What is tested is the forks' bytes.
          if (driver.name === "disk") expect(["source A", "source B"]).toContain((await read(source, path)) ?? "");
          expect(await read(zero, path)).toBe("fork 0's");
          expect(await read(one, path)).toBeNull();
          expect(await read(two, path)).toBe("original");
          expect(await read(three, path)).toBe("fork 3's");
        }
      }, 30_000);
    });
  }
}
