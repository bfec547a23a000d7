import type { DataContext, Principal } from "../sdk/index.ts";
import type { DataStore, DataWrite } from "../store/data.ts";
import { ChangeFeed } from "./changes.ts";
import { type AttrIds, attrEntries, attrKeys, toObjects, toTriples } from "./format.ts";
import { DEFAULT_QUERY_LIMITS, entitiesRead, parseQuery, type QueryLimits, runQuery } from "./query.ts";
import type { DataSchema } from "./schema.ts";
import { ExecutionData } from "./writes.ts";

export type QueryFormat = "triples" | "objects";

/** The data side of a loaded release: its schema, and the hash of its bundle (which keys what is cached per schema). */
export interface ReleaseData {
  readonly hash: string;
  readonly data: DataSchema;
}

/** Reads for every caller (HTTP /query, the MCP query tool, ctx.db.query): one compiler, the caller's rules. */
export class DataService {
  readonly changes: ChangeFeed;
  private readonly attrIdsByBundle = new Map<string, Promise<AttrIds>>();

  constructor(
    private readonly store: DataStore,
    private readonly limits: QueryLimits = DEFAULT_QUERY_LIMITS,
  ) {
    this.changes = new ChangeFeed(store);
  }

  async query(principal: Principal, release: ReleaseData, query: unknown, format: QueryFormat) {
    const roots = parseQuery(query, release.data);
    const viewer = principal.kind === "service" ? null : principal;
    const result = await runQuery(roots, release.data, viewer, this.store, this.limits);
    if (format === "objects") return toObjects(result);
    return toTriples(result, release.data, await this.attrIds(release));
  }

  /** The entities a query depends on (for live queries: which changes can alter its result). Throws QueryRejected. */
  entitiesRead(release: ReleaseData, query: unknown): Set<string> {
    return entitiesRead(parseQuery(query, release.data), release.data);
  }

  /** The attribute list of the triple format, for a live session's `init-ok`. */
  async attrs(release: ReleaseData) {
    return attrEntries(release.data, await this.attrIds(release));
  }

  /** One stored entity's attributes, or null (committed data: an execution's own writes are in ExecutionData). */
  readDoc(entity: string, id: string): Promise<Record<string, unknown> | null> {
    return this.store.readDoc(entity, id);
  }

  /** `ctx.db` for one execution running on `release` as `principal`. */
  forExecution(principal: Principal, release: ReleaseData, now: () => number) {
    const writes = new ExecutionData(release.data, (entity, id) => this.readDoc(entity, id), now);
    const db: DataContext = {
      query: (q) => this.query(principal, release, q, "objects") as Promise<Record<string, unknown[]>>,
      create: (entity, data) => writes.create(entity, data),
      update: (entity, id, patch) => writes.update(entity, id, patch),
      delete: (entity, id) => writes.delete(entity, id),
      link: (entity, id, label, target) => writes.link(entity, id, label, target),
      unlink: (entity, id, label, target) => writes.unlink(entity, id, label, target),
    };
    // A copy: a write a leaked `ctx.db` makes after the settlement is not one of its writes.
    return {
      db,
      writes: () => writes.writes.slice(),
      touched: () => writes.touched(),
      /** Adds a write that is not an entity's (a scheduled invocation) to commit with the others. */
      record: (write: DataWrite) => {
        writes.writes.push(write);
      },
    };
  }

  private attrIds(release: ReleaseData): Promise<AttrIds> {
    let ids = this.attrIdsByBundle.get(release.hash);
    if (!ids) {
      ids = this.store.attrIds(attrKeys(release.data), Date.now());
      ids.catch(() => this.attrIdsByBundle.delete(release.hash));
      this.attrIdsByBundle.set(release.hash, ids);
    }
    return ids;
  }
}
