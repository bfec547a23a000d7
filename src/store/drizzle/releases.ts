import { and, desc, eq, lt, or, sql } from "drizzle-orm";
import type { ActiveRelease, ReleaseKey, ReleaseListRow, ReleaseStore, ReleaseSummary } from "../releases.ts";
import type { ReleaseRow } from "../rows.ts";
import type { SharedDatabase, SharedTables } from "./database.ts";

export class DrizzleReleaseStore implements ReleaseStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Pick<SharedTables, "releases" | "environment">,
  ) {}

  async insert(row: ReleaseRow): Promise<void> {
    await this.db.insert(this.t.releases).values(row);
  }

  async get(version: string): Promise<ReleaseRow | null> {
    const rows = await this.db.select().from(this.t.releases).where(eq(this.t.releases.version, version));
    return rows[0] ?? null;
  }

  list(): Promise<ReleaseSummary[]> {
    return this.summaries().orderBy(this.t.releases.createdAt, this.t.releases.version);
  }

  async published(version: string): Promise<ReleaseSummary | null> {
    const rows = await this.summaries().where(eq(this.t.releases.version, version));
    return rows[0] ?? null;
  }

  private summaries() {
    const r = this.t.releases;
    return this.db
      .select({
        version: r.version,
        bundleHash: r.bundleHash,
        manifest: r.manifest,
        createdAt: r.createdAt,
        publishedBy: r.publishedBy,
      })
      .from(r)
      .$dynamic();
  }

  history(query: { limit: number; after?: ReleaseKey }): Promise<ReleaseListRow[]> {
    const r = this.t.releases;
    const after = query.after;
    return this.db
      .select({ version: r.version, bundleHash: r.bundleHash, createdAt: r.createdAt, publishedBy: r.publishedBy })
      .from(r)
      .where(
        after
          ? or(lt(r.createdAt, after.createdAt), and(eq(r.createdAt, after.createdAt), lt(r.version, after.version)))
          : undefined,
      )
      .orderBy(desc(r.createdAt), desc(r.version))
      .limit(query.limit);
  }

  async active(): Promise<ActiveRelease> {
    const e = this.t.environment;
    const rows = await this.db
      .select({ version: e.activeVersion, revision: e.revision, activatedAt: e.updatedAt })
      .from(e)
      .where(eq(e.id, 1));
    return rows[0] ?? { version: null, revision: 0, activatedAt: null };
  }

  async activate(version: string, at: number): Promise<number> {
    const e = this.t.environment;
    const rows = await this.db
      .insert(e)
      .values({ id: 1, activeVersion: version, revision: 1, updatedAt: at })
      .onConflictDoUpdate({
        target: e.id,
        set: { activeVersion: version, revision: sql`${e.revision} + 1`, updatedAt: at },
      })
      .returning({ revision: e.revision });
    return rows[0]?.revision ?? 0;
  }
}
