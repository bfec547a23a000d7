import type { LoadedRelease } from "../release/load.ts";
import type { Principal } from "../sdk/index.ts";
import type { Store } from "../store/types.ts";
import { type AttrIds, attrKeys, toObjects, toTriples } from "./format.ts";
import { parseQuery, runQuery } from "./query.ts";
import { postgresDialect, type SqlDialect, sqliteDialect } from "./sql-dialect.ts";

export type QueryFormat = "triples" | "objects";

/** Reads for every caller (HTTP /query, the MCP query tool, ctx.db.query): one compiler, the caller's rules. */
export class DataService {
  readonly dialect: SqlDialect;
  private readonly attrIdsByBundle = new Map<string, Promise<AttrIds>>();

  constructor(private readonly store: Store) {
    this.dialect = store.dialect === "sqlite" ? sqliteDialect : postgresDialect;
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
