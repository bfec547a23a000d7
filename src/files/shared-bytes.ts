import type { FileRow } from "../store/rows.ts";
import type { Store } from "../store/store.ts";
import { keyOf, storageFor } from "./environment-storage.ts";
import type { Storage } from "./storage.ts";

/** How long a lease on shared bytes holds when its holder dies: a copy of 5 GiB by CopyObject fits. */
const LEASE_MS = 120_000;
const FIRST_WAIT_MS = 5;
const LONGEST_WAIT_MS = 200;

/**
 * Bytes shared between environments (docs/decisions/shared-files.md). A fork's file rows read their
 * source's bytes (`blobEnvironment`) until one side changes them: nothing is copied at fork time.
 * Before environment E changes or drops its bytes at path P, every other row reading them gets them
 * first, by a copy the storage makes itself (a hard link, CopyObject); before E changes a row that
 * reads another environment's bytes, it takes its own copy. Each copy is made under a lease on the
 * bytes copied, so two copies of one (E, P) never cross: no copy of old bytes lands on newer ones.
 */
export class SharedBytes {
  constructor(
    private readonly store: Store,
    /** The process's driver: every environment's bytes (environment-storage.ts). */
    private readonly driver: Storage,
  ) {}

  /** The storage holding the bytes of `row`, a row of environment `environment`. */
  of(environment: number, row: Pick<FileRow, "blobEnvironment">): Storage {
    return storageFor(this.driver, row.blobEnvironment ?? environment);
  }

  /**
   * Before environment `environment` writes its own bytes at `path` (an upload, a replace, the grant of
   * a presigned PUT): its row, if it read another's bytes, owns a copy of them; rows of other
   * environments reading its bytes read a copy of them from then on.
   */
  async beforeWrite(environment: number, path: string, row?: Pick<FileRow, "blobEnvironment"> | null): Promise<void> {
    const files = this.filesOf(environment);
    // Again until it owns its bytes: meanwhile its owner may have handed them to yet another environment.
    for (let current = row === undefined ? await files.get(path) : row; current?.blobEnvironment != null; ) {
      await this.ownCopy(environment, path, current.blobEnvironment);
      current = await files.get(path);
    }
    if ((await files.referencing(path)).length > 0) {
      await this.leased(environment, path, () => this.handOverLeased(environment, path));
    }
  }

  /**
   * Removes environment `environment`'s file at `path`: its row, and its bytes unless another row still
   * reads them (then that row owns them, the others read it). A row reading another's bytes goes alone.
   */
  async drop(environment: number, path: string, known?: FileRow | null): Promise<void> {
    const files = this.filesOf(environment);
    for (let row = known === undefined ? await files.get(path) : known; ; row = await files.get(path)) {
      if (!row) return;
      const blob = row.blobEnvironment;
      if (blob === null) {
        await this.dropOwn(environment, path, () => files.delete(path));
        return;
      }
      // Under the owner's lease, so a hand-over to this row cannot land between the look and the delete.
      const gone = await this.leased(blob, path, async () => {
        if ((await files.get(path))?.blobEnvironment !== blob) return false;
        await files.delete(path);
        return true;
      });
      if (gone) return;
    }
  }

  /**
   * Drops the bytes of rows of environment `environment` about to be removed with it (their rows are
   * the caller's to delete, after): a row reading another environment's bytes drops nothing; its own
   * bytes still read by another environment are handed over, not deleted.
   */
  async dropBytesOf(environment: number, rows: readonly Pick<FileRow, "path" | "blobEnvironment">[]): Promise<void> {
    for (const row of rows) {
      if (row.blobEnvironment !== null) continue;
      await this.dropOwn(environment, row.path, async () => {});
    }
  }

  /**
   * Drops the bytes of environment `environment`'s files at `paths` (retention's sweep of uploads), as
   * `dropBytesOf` does: their rows are the caller's to delete, after.
   */
  async dropBytesAt(environment: number, paths: readonly string[]): Promise<void> {
    const files = this.filesOf(environment);
    for (const path of paths) {
      const row = await files.get(path);
      await this.dropBytesOf(environment, [row ?? { path, blobEnvironment: null }]);
    }
  }

  /**
   * Drops environment `environment`'s own bytes at `path` after `removeRow`, unless a row of another
   * environment reads them: they are handed over instead (and this environment's copy deleted).
   */
  private async dropOwn(environment: number, path: string, removeRow: () => Promise<void>): Promise<void> {
    const bytes = storageFor(this.driver, environment);
    // Nobody reads them: no lease (a reader appears only by a fork, which no lease orders either).
    if ((await this.filesOf(environment).referencing(path)).length === 0) {
      await bytes.delete(path);
      await removeRow();
      return;
    }
    await this.leased(environment, path, async () => {
      await this.handOverLeased(environment, path);
      await removeRow();
      await bytes.delete(path);
    });
  }

  /** Gives environment `environment`'s row at `path` its own copy of environment `from`'s bytes. */
  private async ownCopy(environment: number, path: string, from: number): Promise<void> {
    await this.leased(from, path, async () => {
      const files = this.filesOf(environment);
      if ((await files.get(path))?.blobEnvironment !== from) return;
      await this.driver.copy(keyOf(from, path), keyOf(environment, path));
      await files.ownBytes(path, from);
    });
  }

  /**
   * Under the lease on (environment, path): copies the bytes to the first environment reading them,
   * which owns them then, and points the other readers at it. Again when that reader went meanwhile.
   */
  private async handOverLeased(environment: number, path: string): Promise<void> {
    const files = this.filesOf(environment);
    for (;;) {
      const [to] = await files.referencing(path);
      if (to === undefined) return;
      // No bytes to copy (a presigned PUT never made): the readers own nothing, as they read nothing.
      await this.driver.copy(keyOf(environment, path), keyOf(to, path));
      if (await files.handOver(path, to)) return;
    }
  }

  /** Runs `work` holding the lease on the bytes of (environment, path), waiting for it while another holds it. */
  private async leased<T>(environment: number, path: string, work: () => Promise<T>): Promise<T> {
    const files = this.filesOf(environment);
    for (let wait = FIRST_WAIT_MS; ; wait = Math.min(wait * 2, LONGEST_WAIT_MS)) {
      // The real clock, not an injected one: leases are between processes.
      const now = Date.now();
      if (await files.leaseBytes(path, now, now + LEASE_MS)) break;
      await Bun.sleep(wait);
    }
    try {
      return await work();
    } finally {
      await files.releaseBytes(path).catch(() => {
        // Left to run out: the next holder takes it over after LEASE_MS.
      });
    }
  }

  private filesOf(environment: number) {
    return this.store.environment(environment).files;
  }
}
