import { and, desc, eq, lt, or, type SQL, sql } from "drizzle-orm";
import type { ActiveRelease, ReleaseKey, ReleaseListRow, ReleaseStore, ReleaseSummary } from "../releases.ts";
import type { ReleaseRow } from "../rows.ts";
import type { SharedDatabase, SharedTables } from "./database.ts";

export class DrizzleReleaseStore implements ReleaseStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Pick<SharedTables, "releases" | "environments">,
    private readonly environment: number,
  ) {}

  async insert(row: ReleaseRow): Promise<void> {
    await this.db.insert(this.t.releases).values({ ...row, environment: this.environment });
  }

  async get(version: string): Promise<ReleaseRow | null> {
    const rows = await this.db
      .select()
      .from(this.t.releases)
      .where(this.mine(eq(this.t.releases.version, version)));
    return rows[0] ?? null;
  }

  /** `condition` within this environment's releases. */
  private mine(condition?: SQL) {
    return and(eq(this.t.releases.environment, this.environment), condition);
  }

  list(): Promise<ReleaseSummary[]> {
    return this.summaries().where(this.mine()).orderBy(this.t.releases.createdAt, this.t.releases.version);
  }

  async published(version: string): Promise<ReleaseSummary | null> {
    const rows = await this.summaries().where(this.mine(eq(this.t.releases.version, version)));
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
        this.mine(
          after
            ? or(lt(r.createdAt, after.createdAt), and(eq(r.createdAt, after.createdAt), lt(r.version, after.version)))
            : undefined,
        ),
      )
      .orderBy(desc(r.createdAt), desc(r.version))
      .limit(query.limit);
  }

  async active(): Promise<ActiveRelease> {
    const e = this.t.environments;
    const rows = await this.db
      .select({ version: e.activeVersion, revision: e.revision, activatedAt: e.updatedAt })
      .from(e)
      .where(eq(e.id, this.environment));
    const row = rows[0];
    if (!row?.version) return { version: null, revision: row?.revision ?? 0, activatedAt: null };
    return row;
  }

  /**
   * `next_tick_at` is set to `at` for a release with schedules (found by the next schedule pass), else null.
   * `changed` takes the next number of the service-wide sequence of changes (one more than the largest),
   * so an instance polling `changed > last seen` finds this activation (see EnvironmentStore's poll).
   */
  async activate(version: string, at: number, schedules = true): Promise<number> {
    const e = this.t.environments;
    const rows = await this.db
      .update(e)
      .set({
        activeVersion: version,
        revision: sql`${e.revision} + 1`,
        updatedAt: at,
        changed: sql`(select coalesce(max(changed), 0) + 1 from environments)`,
        // Its schedules are looked at by the next pass of whichever instance takes it.
        nextTickAt: schedules ? at : null,
      })
      .where(eq(e.id, this.environment))
      .returning({ revision: e.revision });
    const revision = rows[0]?.revision;
    if (revision === undefined) throw new Error(`environment ${this.environment} does not exist`);
    return revision;
  }
}
