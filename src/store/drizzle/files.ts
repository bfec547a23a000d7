import { and, asc, eq, getTableColumns, gt, gte, inArray, lt, type SQL, sql } from "drizzle-orm";
import type { FileListQuery, FileStore } from "../files.ts";
import type { FileRow, NewFileRow } from "../rows.ts";
import type { SharedDatabase, SharedTables } from "./database.ts";

/**
 * How long a used grant is remembered past its expiry: a request that verified its grant just before
 * the expiry (or on an instance whose clock runs behind) still finds the grant's use.
 */
const USED_GRANT_MARGIN_MS = 3_600_000;

/**
 * The file rows of one environment (paths are the environment's own: the same path in two is two files).
 * Used upload grants are the service's: a grant's hash is unique, and the grant names its environment.
 */
export class DrizzleFileStore implements FileStore {
  /** A row's columns but its environment (this store's, bound). */
  private readonly columns;

  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Pick<SharedTables, "files" | "usedUploadGrants">,
    private readonly environment: number,
  ) {
    const { environment: _, ...columns } = getTableColumns(t.files);
    this.columns = columns;
  }

  /** `condition` within this environment's files. */
  private mine(condition?: SQL) {
    return and(eq(this.t.files.environment, this.environment), condition);
  }

  async get(path: string): Promise<FileRow | null> {
    const rows = await this.db
      .select(this.columns)
      .from(this.t.files)
      .where(this.mine(eq(this.t.files.path, path)));
    return rows[0] ?? null;
  }

  async put(row: NewFileRow): Promise<void> {
    const { createdAt: _, path: __, ...changes } = row;
    const f = this.t.files;
    await this.db
      .insert(f)
      .values({ ...row, environment: this.environment })
      .onConflictDoUpdate({ target: [f.environment, f.path], set: changes });
  }

  async delete(path: string): Promise<void> {
    await this.db.delete(this.t.files).where(this.mine(eq(this.t.files.path, path)));
  }

  list(query: FileListQuery): Promise<FileRow[]> {
    const f = this.t.files;
    const conditions: SQL[] = [];
    if (query.owner) conditions.push(eq(f.ownerKind, query.owner.kind), eq(f.ownerId, query.owner.id));
    if (query.prefix !== "") {
      // substr counts characters on both databases; `>=` lets the index start at the prefix.
      const length = [...query.prefix].length;
      conditions.push(gte(f.path, query.prefix), sql`substr(${f.path}, 1, ${length}) = ${query.prefix}`);
    }
    if (query.afterPath !== undefined) conditions.push(gt(f.path, query.afterPath));
    return this.db
      .select(this.columns)
      .from(f)
      .where(this.mine(and(...conditions)))
      .orderBy(asc(f.path))
      .limit(query.limit);
  }

  async uploadsOf(executionIds: string[]): Promise<FileRow[]> {
    if (executionIds.length === 0) return [];
    const f = this.t.files;
    const rows = await this.db
      .select(this.columns)
      .from(f)
      .where(this.mine(inArray(f.executionId, executionIds)));
    // Sorted here, not by the database: a PostgreSQL collation (en_US…) orders `photoB` and `photo_a` as
    // no other answer does; the invoke's own answer sorts its uploads the same way (files/service.ts).
    const field = (row: FileRow) => row.field ?? "";
    return rows.sort((a, b) => (field(a) < field(b) ? -1 : field(a) > field(b) ? 1 : 0));
  }

  async spendUploadGrant(grantHash: string, expiresAt: number, now: number): Promise<boolean> {
    const g = this.t.usedUploadGrants;
    // Grants long past their expiry can be used no more: forgetting them keeps the table small.
    await this.db.delete(g).where(lt(g.expiresAt, now - USED_GRANT_MARGIN_MS));
    const added = await this.db
      .insert(g)
      .values({ grantHash, expiresAt })
      .onConflictDoNothing({ target: g.grantHash })
      .returning({ grantHash: g.grantHash });
    return added.length > 0;
  }

  async refundUploadGrant(grantHash: string): Promise<void> {
    await this.db.delete(this.t.usedUploadGrants).where(eq(this.t.usedUploadGrants.grantHash, grantHash));
  }

  async referencing(path: string): Promise<number[]> {
    const f = this.t.files;
    const rows = await this.db
      .select({ environment: f.environment })
      .from(f)
      .where(and(eq(f.blobEnvironment, this.environment), eq(f.path, path)))
      .orderBy(asc(f.environment));
    return rows.map((row) => row.environment);
  }

  async handOver(path: string, to: number): Promise<boolean> {
    const f = this.t.files;
    // One statement, so no reader finds the bytes owned by nobody; the subquery makes it a no-op when
    // `to` stopped reading them (its own write, its delete) since the caller looked.
    const changed = await this.db
      .update(f)
      .set({ blobEnvironment: sql`case when ${f.environment} = ${to} then null else cast(${to} as integer) end` })
      .where(
        and(
          eq(f.blobEnvironment, this.environment),
          eq(f.path, path),
          sql`exists (select 1 from ${f} as target where target.environment = ${to} and target.path = ${path} and target.blob_environment = ${this.environment})`,
        ),
      )
      .returning({ environment: f.environment });
    return changed.length > 0;
  }

  async ownBytes(path: string, from: number): Promise<boolean> {
    const f = this.t.files;
    const changed = await this.db
      .update(f)
      .set({ blobEnvironment: null })
      .where(this.mine(and(eq(f.path, path), eq(f.blobEnvironment, from))))
      .returning({ path: f.path });
    return changed.length > 0;
  }

  async leaseBytes(path: string, now: number, until: number): Promise<boolean> {
    const g = this.t.usedUploadGrants;
    const key = this.leaseKey(path);
    await this.db.delete(g).where(and(eq(g.grantHash, key), lt(g.expiresAt, now)));
    const added = await this.db
      .insert(g)
      .values({ grantHash: key, expiresAt: until })
      .onConflictDoNothing({ target: g.grantHash })
      .returning({ grantHash: g.grantHash });
    return added.length > 0;
  }

  async releaseBytes(path: string): Promise<void> {
    const g = this.t.usedUploadGrants;
    await this.db.delete(g).where(eq(g.grantHash, this.leaseKey(path)));
  }

  /**
   * A lease is a row of used_upload_grants (a unique key with an end, forgotten after it like a grant):
   * its key is no grant's hash (those are hex alone).
   */
  private leaseKey(path: string): string {
    return `bytes:${new Bun.CryptoHasher("sha256").update(`${this.environment}\0${path}`).digest("hex")}`;
  }
}
