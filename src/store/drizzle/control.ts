import { and, asc, type Column, count, eq, inArray, isNull, lte, ne, or, type SQL, sql } from "drizzle-orm";
import { PublicError } from "../../lib/errors.ts";
import { checkHandle } from "../../lib/handles.ts";
import {
  type ControlStore,
  type DroppedFile,
  ENVIRONMENT_TABLES,
  type EnvironmentContents,
  type EnvironmentStore,
  type ForkCopied,
  type ForkTarget,
  type GrantStore,
  HandleTaken,
  type OrganizationStore,
  type Scope,
  type ScopedKeyListRow,
  type ScopedKeyStore,
  type VerifiedKey,
} from "../control.ts";
import type { EnvironmentRow, GrantRow, OrganizationRow } from "../rows.ts";
import { prepared, type SharedDatabase, type SharedTables } from "./database.ts";
import { ABANDONED_FORK_MS, FORKING, type ForkCopier, forkedTables } from "./fork-tables.ts";

/** Rows a statement of an environment's delete removes at most: other writers wait one such statement. */
export const DELETE_BATCH = 2_000;
/** How stale a key's `last_used_at` may be before a use writes it again. */
export const LAST_USED_RESOLUTION_MS = 60_000;
/** A grant of every environment of its organization. */
const WHOLE_ORGANIZATION = 0;

export function drizzleControlStore(db: SharedDatabase, t: SharedTables, forks: ForkCopier): ControlStore {
  return {
    organizations: new DrizzleOrganizationStore(db, t),
    environments: new DrizzleEnvironmentStore(db, t, forks),
    keys: new DrizzleScopedKeyStore(db, t),
    grants: new DrizzleGrantStore(db, t),
  };
}

class DrizzleOrganizationStore implements OrganizationStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: SharedTables,
  ) {}

  async create(handle: string, at: number): Promise<OrganizationRow> {
    const rows = await this.db
      .insert(this.t.organizations)
      .values({ handle: checkHandle(handle), createdAt: at })
      .onConflictDoNothing()
      .returning();
    const row = rows[0];
    if (!row) throw new HandleTaken(handle, "organization");
    return row;
  }

  async byHandle(handle: string): Promise<OrganizationRow | null> {
    const rows = await this.db.select().from(this.t.organizations).where(eq(this.t.organizations.handle, handle));
    return rows[0] ?? null;
  }

  async byId(id: number): Promise<OrganizationRow | null> {
    const rows = await this.db.select().from(this.t.organizations).where(eq(this.t.organizations.id, id));
    return rows[0] ?? null;
  }

  list(): Promise<OrganizationRow[]> {
    return this.db.select().from(this.t.organizations).orderBy(this.t.organizations.handle);
  }
}

/** The next number of the service-wide sequence of environment changes. */
const nextChanged = sql`(select coalesce(max(changed), 0) + 1 from environments)`;
/** Not a fork still being copied. */
const shown = (e: SharedTables["environments"]) => ne(e.changed, FORKING);

class DrizzleEnvironmentStore implements EnvironmentStore {
  /** Polled by every instance every RELEASE_POLL_MS; looked up by host. Prepared once. */
  private readonly changedAfter;
  private readonly withHandle;
  private readonly withId;

  constructor(
    private readonly db: SharedDatabase,
    private readonly t: SharedTables,
    private readonly forks: ForkCopier,
  ) {
    const e = t.environments;
    this.changedAfter = prepared(
      db
        .select()
        .from(e)
        .where(sql`${e.changed} > ${sql.placeholder("changed")}`)
        .orderBy(e.changed),
      "environments_changed_since",
    );
    this.withHandle = prepared(
      db
        .select()
        .from(e)
        .where(and(eq(e.handle, sql.placeholder("handle")), shown(e))),
      "environments_by_handle",
    );
    this.withId = prepared(
      db
        .select()
        .from(e)
        .where(and(eq(e.id, sql.placeholder("id")), shown(e))),
      "environments_by_id",
    );
  }

  async create(handle: string, organization: number, at: number): Promise<EnvironmentRow> {
    const rows = await this.db
      .insert(this.t.environments)
      .values({ handle: checkHandle(handle), organization, updatedAt: at, createdAt: at, changed: nextChanged })
      .onConflictDoNothing()
      .returning();
    const row = rows[0];
    if (!row) throw new HandleTaken(handle, "environment");
    return row;
  }

  async byHandle(handle: string): Promise<EnvironmentRow | null> {
    return (await this.withHandle.execute({ handle }))[0] ?? null;
  }

  async byId(id: number): Promise<EnvironmentRow | null> {
    return (await this.withId.execute({ id }))[0] ?? null;
  }

  list(organization?: number): Promise<EnvironmentRow[]> {
    const e = this.t.environments;
    return this.db
      .select()
      .from(e)
      .where(and(organization === undefined ? undefined : eq(e.organization, organization), shown(e)))
      .orderBy(sql`${e.handle} is null`, e.handle);
  }

  async nameSingle(handle: string, organization?: number): Promise<EnvironmentRow> {
    checkHandle(handle);
    const e = this.t.environments;
    const single = await this.byId(1);
    if (!single) throw new Error("environment 1 does not exist (the database was not migrated)");
    if (single.handle !== null) return single;
    const taken = await this.byHandle(handle);
    // Environment 1 itself, named since the read above by another instance starting at the same time.
    if (taken && taken.id !== 1) throw new HandleTaken(handle, "environment");
    const rows = await this.db
      .update(e)
      .set({ handle, organization: sql`coalesce(${e.organization}, ${organization ?? null})`, changed: nextChanged })
      .where(and(eq(e.id, 1), isNull(e.handle)))
      .returning();
    // Named meanwhile by another instance starting: its name stands.
    return rows[0] ?? ((await this.byId(1)) as EnvironmentRow);
  }

  async present(ids: number[]): Promise<number[]> {
    if (ids.length === 0) return [];
    const e = this.t.environments;
    const rows = await this.db
      .select({ id: e.id })
      .from(e)
      .where(and(inArray(e.id, ids), shown(e)));
    return rows.map((row) => row.id);
  }

  changedSince(changed: number): Promise<EnvironmentRow[]> {
    return this.changedAfter.execute({ changed });
  }

  async describeDelete(id: number): Promise<EnvironmentContents | null> {
    if (!(await this.byId(id))) return null;
    const counts = await Promise.all(
      ENVIRONMENT_TABLES.map(async (name) => {
        const table = this.t[name];
        const rows = await this.db.select({ n: count() }).from(table).where(eq(table.environment, id));
        return [name, Number(rows[0]?.n ?? 0)] as const;
      }),
    );
    return Object.fromEntries(counts) as EnvironmentContents;
  }

  async delete(id: number, dropFiles: (files: DroppedFile[]) => Promise<void>): Promise<EnvironmentContents | null> {
    const t = this.t;
    const e = t.environments;
    // First out of service: no active release, and a change for the poll of changedSince to read.
    const stopped = await this.db
      .update(e)
      .set({ activeVersion: null, revision: sql`${e.revision} + 1`, changed: nextChanged })
      .where(eq(e.id, id))
      .returning({ id: e.id });
    if (stopped.length === 0) return null;
    const removed = Object.fromEntries(ENVIRONMENT_TABLES.map((name) => [name, 0])) as EnvironmentContents;
    // Executions with what hangs off them (a run has its execution's id; steps and logs are keyed by it,
    // with no index on their environment), a batch of ids at a time.
    for (;;) {
      const ids = (
        await this.db
          .select({ id: t.executions.id })
          .from(t.executions)
          .where(eq(t.executions.environment, id))
          .limit(DELETE_BATCH)
      ).map((row) => row.id);
      if (ids.length === 0) break;
      removed.executionLogs += await this.removed(
        t.executionLogs,
        and(eq(t.executionLogs.environment, id), inArray(t.executionLogs.executionId, ids)),
      );
      removed.workflowSteps += await this.removed(
        t.workflowSteps,
        and(eq(t.workflowSteps.environment, id), inArray(t.workflowSteps.runId, ids)),
      );
      removed.workflowRuns += await this.removed(
        t.workflowRuns,
        and(eq(t.workflowRuns.environment, id), inArray(t.workflowRuns.id, ids)),
      );
      removed.executions += await this.removed(
        t.executions,
        and(eq(t.executions.environment, id), inArray(t.executions.id, ids)),
      );
    }
    for (;;) {
      const files = await this.db
        .select({ path: t.files.path, blobEnvironment: t.files.blobEnvironment })
        .from(t.files)
        .where(eq(t.files.environment, id))
        .limit(DELETE_BATCH);
      if (files.length === 0) break;
      await dropFiles(files);
      const paths = files.map((file) => file.path);
      removed.files += await this.removed(t.files, and(eq(t.files.environment, id), inArray(t.files.path, paths)));
    }
    // The rest by their primary keys, each led by the environment or unique alone.
    const batches: [keyof EnvironmentContents, Column[]][] = [
      ["scheduledInvocations", [t.scheduledInvocations.id]],
      ["scheduleTicks", [t.scheduleTicks.environment, t.scheduleTicks.name]],
      ["dataLinks", [t.dataLinks.environment, t.dataLinks.link, t.dataLinks.sourceId, t.dataLinks.targetId]],
      ["dataEntities", [t.dataEntities.environment, t.dataEntities.id]],
      ["dataAttrs", [t.dataAttrs.environment, t.dataAttrs.id]],
      ["releases", [t.releases.environment, t.releases.version]],
      ["apiTokens", [t.apiTokens.id]],
      ["variables", [t.variables.environment, t.variables.name]],
    ];
    for (const [name, key] of batches) removed[name] += await this.removeInBatches(name, key, id);
    removed.grants = await this.removed(t.grants, eq(t.grants.environment, id));
    removed.scopedKeys = await this.removed(t.scopedKeys, eq(t.scopedKeys.environment, id));
    // The sequence of changes must not go back when its largest goes: pollers ask for what is past the
    // largest they saw. Another environment takes the next number (a change a poller reads as nothing new).
    await this.db
      .update(e)
      .set({ changed: nextChanged })
      .where(
        eq(
          e.id,
          this.db
            .select({ id: sql`min(${e.id})` })
            .from(e)
            .where(ne(e.id, id)),
        ),
      );
    await this.db.delete(e).where(eq(e.id, id));
    return removed;
  }

  async setSchedulesPaused(id: number, paused: boolean, at: number): Promise<EnvironmentRow | null> {
    const e = this.t.environments;
    const rows = await this.db
      .update(e)
      .set(paused ? { schedulesPaused: true } : { schedulesPaused: false, nextTickAt: at })
      .where(eq(e.id, id))
      .returning();
    return rows[0] ?? null;
  }

  async claimExpired(now: number, leaseUntil: number, limit: number): Promise<EnvironmentRow[]> {
    const e = this.t.environments;
    const due = this.db
      .select({ id: e.id })
      .from(e)
      .where(and(lte(e.expiresAt, now), ne(e.id, 1)))
      .orderBy(asc(e.expiresAt))
      .limit(limit);
    // The condition again in the update: an instance that took the row meanwhile moved it past `now`.
    return this.db
      .update(e)
      .set({ expiresAt: leaseUntil })
      .where(and(inArray(e.id, due), lte(e.expiresAt, now)))
      .returning();
  }

  async setExpiresAt(id: number, expiresAt: number | null): Promise<void> {
    const e = this.t.environments;
    await this.db.update(e).set({ expiresAt }).where(eq(e.id, id));
  }

  async fork(source: number, target: ForkTarget): Promise<{ environment: EnvironmentRow; copied: ForkCopied }> {
    const e = this.t.environments;
    const handle = checkHandle(target.handle);
    await this.removeAbandonedForks();
    const from = await this.byId(source);
    if (!from) throw new PublicError("environment_not_found", `environment ${source} does not exist`);
    // Made first, out of sight, so its id keys the copied rows and its handle is taken meanwhile.
    const made = await this.db
      .insert(e)
      .values({
        handle,
        organization: target.organization,
        updatedAt: Date.now(),
        createdAt: target.at,
        changed: FORKING,
        forkedFrom: from.handle,
        expiresAt: target.expiresAt,
        schedulesPaused: true,
      })
      .onConflictDoNothing()
      .returning({ id: e.id });
    const id = made[0]?.id;
    if (id === undefined) throw new HandleTaken(handle, "environment");
    try {
      const tables = forkedTables(this.t, { data: target.data, secrets: target.secrets });
      const { sourceFound, activeVersion, copied } = await this.forks.copy(source, id, tables);
      if (!sourceFound) throw new PublicError("environment_not_found", `environment ${source} was deleted meanwhile`);
      // Shown: the next number of the sequence is taken now, after the copy, so no poller has passed it.
      const shownRows = await this.db
        .update(e)
        .set({
          activeVersion,
          revision: activeVersion === null ? 0 : 1,
          updatedAt: target.at,
          nextTickAt: null,
          changed: nextChanged,
        })
        .where(and(eq(e.id, id), eq(e.changed, FORKING)))
        .returning();
      const environment = shownRows[0];
      if (!environment) throw new Error(`the fork ${handle} was removed while it was copied`);
      return { environment, copied };
    } catch (error) {
      await this.removeFork(id);
      throw error;
    }
  }

  /** Forks whose copy stopped (a crash): removed as any environment is, their rows first. */
  private async removeAbandonedForks(): Promise<void> {
    for (const id of await this.forks.abandoned(Date.now() - ABANDONED_FORK_MS)) await this.removeFork(id);
  }

  /** A fork's file rows name bytes of another environment's storage (`blob_environment`): none is dropped. */
  private async removeFork(id: number): Promise<void> {
    await this.delete(id, async () => {});
  }

  /** Deletes the environment's rows of a table, DELETE_BATCH at a time by `key` (its primary key). */
  private async removeInBatches(name: keyof EnvironmentContents, key: Column[], id: number): Promise<number> {
    const table = this.t[name];
    const columns = sql.join(key, sql`, `);
    const batch = sql`(select ${columns} from ${table} where ${table.environment} = ${id} limit ${DELETE_BATCH})`;
    let total = 0;
    for (;;) {
      const n = await this.removed(table, sql`(${columns}) in ${batch}`);
      total += n;
      if (n < DELETE_BATCH) return total;
    }
  }

  private async removed(table: SharedTables[keyof EnvironmentContents], where: SQL | undefined): Promise<number> {
    const rows = await this.db.delete(table).where(where).returning({ one: sql`1` });
    return rows.length;
  }
}

class DrizzleScopedKeyStore implements ScopedKeyStore {
  /** Every request with a stored key reads it: prepared once. */
  private readonly live;
  private readonly listed;

  constructor(
    private readonly db: SharedDatabase,
    private readonly t: SharedTables,
  ) {
    const k = t.scopedKeys;
    this.listed = {
      id: k.id,
      prefix: k.prefix,
      organization: k.organization,
      environment: k.environment,
      createdAt: k.createdAt,
      lastUsedAt: k.lastUsedAt,
      revokedAt: k.revokedAt,
    };
    this.live = prepared(
      db
        .select(this.listed)
        .from(k)
        .where(and(eq(k.keyHash, sql.placeholder("keyHash")), isNull(k.revokedAt))),
      "scoped_keys_live_by_hash",
    );
  }

  async create(scope: Scope, keyHash: string, prefix: string, at: number): Promise<ScopedKeyListRow> {
    const row = {
      id: Bun.randomUUIDv7(),
      prefix,
      organization: scope.organization ?? null,
      environment: scope.environment ?? null,
      createdAt: at,
      lastUsedAt: null,
      revokedAt: null,
    };
    await this.db.insert(this.t.scopedKeys).values({ ...row, keyHash });
    return row;
  }

  list(scope?: Scope): Promise<ScopedKeyListRow[]> {
    const k = this.t.scopedKeys;
    const where =
      scope?.organization !== undefined
        ? eq(k.organization, scope.organization)
        : scope?.environment !== undefined
          ? eq(k.environment, scope.environment)
          : undefined;
    return this.db.select(this.listed).from(k).where(where).orderBy(asc(k.createdAt), asc(k.id));
  }

  byPrefix(prefix: string): Promise<ScopedKeyListRow[]> {
    return this.db.select(this.listed).from(this.t.scopedKeys).where(eq(this.t.scopedKeys.prefix, prefix));
  }

  async byId(id: string): Promise<ScopedKeyListRow | null> {
    const rows = await this.db.select(this.listed).from(this.t.scopedKeys).where(eq(this.t.scopedKeys.id, id));
    return rows[0] ?? null;
  }

  async revoke(id: string, at: number): Promise<boolean> {
    const k = this.t.scopedKeys;
    const rows = await this.db
      .update(k)
      .set({ revokedAt: at })
      .where(and(eq(k.id, id), isNull(k.revokedAt)))
      .returning({ id: k.id });
    return rows.length > 0;
  }

  async verify(keyHash: string, at: number): Promise<VerifiedKey | null> {
    const row = (await this.live.execute({ keyHash }))[0];
    if (!row) return null;
    if (row.lastUsedAt === null || row.lastUsedAt <= at - LAST_USED_RESOLUTION_MS) {
      const k = this.t.scopedKeys;
      await this.db.update(k).set({ lastUsedAt: at }).where(eq(k.id, row.id));
    }
    return { id: row.id, prefix: row.prefix, organization: row.organization, environment: row.environment };
  }
}

class DrizzleGrantStore implements GrantStore {
  /** Asked when a person opens an environment: prepared once. */
  private readonly granted;

  constructor(
    private readonly db: SharedDatabase,
    private readonly t: SharedTables,
  ) {
    const g = t.grants;
    const e = t.environments;
    const environment = sql.placeholder("environment");
    const organizationOf = db.select({ organization: e.organization }).from(e).where(eq(e.id, environment));
    this.granted = prepared(
      db
        .select({ one: sql<number>`1` })
        .from(g)
        .where(
          and(
            eq(g.userId, sql.placeholder("userId")),
            or(
              eq(g.environment, environment),
              and(eq(g.environment, WHOLE_ORGANIZATION), eq(g.organization, organizationOf)),
            ),
          ),
        )
        .limit(1),
      "grants_may_use",
    );
  }

  /** The grant's row key: an environment's organization is read from its row. */
  private async keyOf(scope: Scope): Promise<{ organization: number; environment: number }> {
    if (scope.organization !== undefined) return { organization: scope.organization, environment: WHOLE_ORGANIZATION };
    const e = this.t.environments;
    const rows = await this.db.select({ organization: e.organization }).from(e).where(eq(e.id, scope.environment));
    const organization = rows[0]?.organization;
    if (organization === undefined || organization === null) {
      throw new PublicError(
        "invalid_request",
        `environment ${scope.environment} belongs to no organization (single mode's): grants are given within one`,
      );
    }
    return { organization, environment: scope.environment };
  }

  async grant(userId: string, scope: Scope, at: number): Promise<boolean> {
    const key = await this.keyOf(scope);
    const rows = await this.db
      .insert(this.t.grants)
      .values({ userId, ...key, createdAt: at })
      .onConflictDoNothing()
      .returning({ userId: this.t.grants.userId });
    return rows.length > 0;
  }

  async revoke(userId: string, scope: Scope, at: number): Promise<{ revoked: boolean; tokens: number }> {
    const { grants: g, environments: e, apiTokens: tokens } = this.t;
    const key = await this.keyOf(scope);
    const deleted = await this.db
      .delete(g)
      .where(and(eq(g.userId, userId), eq(g.organization, key.organization), eq(g.environment, key.environment)))
      .returning({ userId: g.userId });
    if (deleted.length === 0) return { revoked: false, tokens: 0 };
    // The environments the grant covered that no remaining grant of the person covers.
    const stillGranted = this.db
      .select({ one: sql`1` })
      .from(g)
      .where(
        and(
          eq(g.userId, userId),
          eq(g.organization, key.organization),
          or(eq(g.environment, WHOLE_ORGANIZATION), eq(g.environment, e.id)),
        ),
      );
    const lost = this.db
      .select({ id: e.id })
      .from(e)
      .where(
        and(
          key.environment === WHOLE_ORGANIZATION ? eq(e.organization, key.organization) : eq(e.id, key.environment),
          sql`not exists ${stillGranted}`,
        ),
      );
    const revoked = await this.db
      .update(tokens)
      .set({ revokedAt: at })
      .where(and(eq(tokens.userId, userId), isNull(tokens.revokedAt), inArray(tokens.environment, lost)))
      .returning({ id: tokens.id });
    return { revoked: true, tokens: revoked.length };
  }

  list(filter: { organization?: number; environment?: number; userId?: string } = {}): Promise<GrantRow[]> {
    const g = this.t.grants;
    return this.db
      .select()
      .from(g)
      .where(
        and(
          filter.organization === undefined ? undefined : eq(g.organization, filter.organization),
          filter.environment === undefined ? undefined : eq(g.environment, filter.environment),
          filter.userId === undefined ? undefined : eq(g.userId, filter.userId),
        ),
      )
      .orderBy(g.organization, g.environment, g.userId);
  }

  async mayUse(userId: string, environment: number): Promise<boolean> {
    if (environment === WHOLE_ORGANIZATION) return false;
    return (await this.granted.execute({ userId, environment })).length > 0;
  }
}
