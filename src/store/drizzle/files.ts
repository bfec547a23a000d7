import { eq, inArray } from "drizzle-orm";
import type { FileStore } from "../files.ts";
import type { FileRow, NewFileRow } from "../rows.ts";
import type { AnyDatabase, Tables } from "./database.ts";

export class DrizzleFileStore implements FileStore {
  constructor(
    private readonly db: AnyDatabase,
    private readonly t: Pick<Tables, "files">,
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

  async uploadsOf(executionIds: string[]): Promise<FileRow[]> {
    if (executionIds.length === 0) return [];
    const f = this.t.files;
    return this.db.select().from(f).where(inArray(f.executionId, executionIds)).orderBy(f.field);
  }
}
