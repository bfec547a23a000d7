import type { LoadedRelease } from "../release/load.ts";
import type { DataContext, Principal } from "../sdk/index.ts";
import type { Store } from "../store/store.ts";
import { ChangeFeed } from "./changes.ts";
import { type AttrIds, attrEntries, attrKeys, toObjects, toTriples } from "./format.ts";
import { entitiesRead, parseQuery, runQuery } from "./query.ts";
import { postgresDialect, type SqlDialect, sqliteDialect } from "./sql-dialect.ts";
import { ExecutionData, writeStatements } from "./writes.ts";

export type QueryFormat = "triples" | "objects";

/** Reads for every caller (HTTP /query, the MCP query tool, ctx.db.query): one compiler, the caller's rules. */
export class DataService {
  readonly dialect: SqlDialect;
  readonly changes: ChangeFeed;
  private readonly attrIdsByBundle = new Map<string, Promise<AttrIds>>();

  constructor(private readonly store: Store) {
    this.dialect = store.dialect === "sqlite" ? sqliteDialect : postgresDialect;
    this.changes = new ChangeFeed(store);
  }

  async query(principal: Principal, release: LoadedRelease, query: unknown, format: QueryFormat) {
    const roots = parseQuery(query, release.data);
    const result = await runQuery(
      roots,
      release.data,
      this.dialect,
      principal.kind === "service" ? null : principal,
      (sql, params) => this.store.dataSelect(sql, params),
    );
    if (format === "objects") return toObjects(result);
    return toTriples(result, release.data, await this.attrIds(release));
  }

  /** The entities a query depends on (for live queries: which changes can alter its result). Throws QueryRejected. */
  entitiesRead(release: LoadedRelease, query: unknown): Set<string> {
    return entitiesRead(parseQuery(query, release.data), release.data);
  }

  /** The attribute list of the triple format, for a live session's `init-ok`. */
  async attrs(release: LoadedRelease) {
    return attrEntries(release.data, await this.attrIds(release));
  }

  /** One stored entity's attributes, or null (committed data: an execution's own writes are in ExecutionData). */
  async readDoc(entity: string, id: string): Promise<Record<string, unknown> | null> {
    const params: unknown[] = [];
    const sql = `select doc from data_entities where id = ${this.dialect.param(params, id)} and entity = ${this.dialect.param(params, entity)}`;
    const [row] = await this.store.dataSelect(sql, params);
    if (!row) return null;
    return (typeof row.doc === "string" ? JSON.parse(row.doc) : row.doc) as Record<string, unknown>;
  }

  /** `ctx.db` for one execution running on `release` as `principal`. */
  forExecution(principal: Principal, release: LoadedRelease, now: () => number) {
    const writes = new ExecutionData(release.data, (entity, id) => this.readDoc(entity, id), now);
    const db: DataContext = {
      query: (q) => this.query(principal, release, q, "objects") as Promise<Record<string, unknown[]>>,
      create: (entity, data) => writes.create(entity, data),
      update: (entity, id, patch) => writes.update(entity, id, patch),
      delete: (entity, id) => writes.delete(entity, id),
      link: (entity, id, label, target) => writes.link(entity, id, label, target),
      unlink: (entity, id, label, target) => writes.unlink(entity, id, label, target),
    };
    return { db, statements: () => writeStatements(this.dialect, writes.writes), touched: () => writes.touched() };
  }

  /** The indexes a release's schema declares (unique ones enforce uniqueness); run before it is stored. */
  indexStatements(release: LoadedRelease): string[] {
    return [...release.data.entities.values()].flatMap((entity) =>
      [...entity.attrs.values()].filter((a) => a.indexed).map((a) => this.dialect.indexDdl(a)),
    );
  }

  private attrIds(release: LoadedRelease): Promise<AttrIds> {
    let ids = this.attrIdsByBundle.get(release.hash);
    if (!ids) {
      ids = this.store.attrIds(attrKeys(release.data), Date.now());
      ids.catch(() => this.attrIdsByBundle.delete(release.hash));
      this.attrIdsByBundle.set(release.hash, ids);
    }
    return ids;
  }
}
