import { and, asc, eq, gt, gte, inArray, lt, type SQL, sql } from "drizzle-orm";
import type { FileListQuery, FileStore } from "../files.ts";
import type { FileRow, NewFileRow } from "../rows.ts";
import type { SharedDatabase, SharedTables } from "./database.ts";

/**
 * How long a used grant is remembered past its expiry: a request that verified its grant just before
 * the expiry (or on an instance whose clock runs behind) still finds the grant's use.
 */
const USED_GRANT_MARGIN_MS = 3_600_000;

export class DrizzleFileStore implements FileStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Pick<SharedTables, "files" | "usedUploadGrants">,
  ) {}

  async get(path: string): Promise<FileRow | null> {
    const rows = await this.db.select().from(this.t.files).where(eq(this.t.files.path, path));
    return rows[0] ?? null;
  }

  async put(row: NewFileRow): Promise<void> {
    const { createdAt: _, path: __, ...changes } = row;
    await this.db.insert(this.t.files).values(row).onConflictDoUpdate({ target: this.t.files.path, set: changes });
  }

  async delete(path: string): Promise<void> {
    await this.db.delete(this.t.files).where(eq(this.t.files.path, path));
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
      .select()
      .from(f)
      .where(and(...conditions))
      .orderBy(asc(f.path))
      .limit(query.limit);
  }

  async uploadsOf(executionIds: string[]): Promise<FileRow[]> {
    if (executionIds.length === 0) return [];
    const f = this.t.files;
    const rows = await this.db.select().from(f).where(inArray(f.executionId, executionIds));
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
}
