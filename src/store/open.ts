import type { Store } from "./store.ts";

/**
 * `postgres://…` opens PostgreSQL; `sqlite:<path>` (or `file:<path>`) opens SQLite, with
 * `?synchronous=full` for an fsync per commit (default `normal`). Each dialect loads on demand.
 */
export async function openStore(databaseUrl: string): Promise<Store> {
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    const { openPostgresStore } = await import("./pg/open.ts");
    return openPostgresStore(databaseUrl);
  }
  const { openSqliteStore } = await import("./sqlite/open.ts");
  const [path, query] = sqliteUrlParts(databaseUrl);
  const params = new URLSearchParams(query);
  const synchronous = params.get("synchronous")?.toLowerCase() ?? "normal";
  const unknown = [...params.keys()].filter((name) => name !== "synchronous");
  if ((synchronous !== "normal" && synchronous !== "full") || unknown.length > 0) {
    throw new Error(`DATABASE_URL: a SQLite URL takes only ?synchronous=normal or ?synchronous=full (got ?${query})`);
  }
  return openSqliteStore(path, { synchronous });
}

/** A `sqlite:<path>?<query>` (or `file:`) URL's file and query. */
export function sqliteUrlParts(databaseUrl: string): [path: string, query: string] {
  const [path = "", query = ""] = databaseUrl.replace(/^(sqlite|file):(\/\/)?/, "").split("?", 2);
  return [path, query];
}

/** The database as a log line may show it: a PostgreSQL URL without its credentials. */
export function describeDatabase(url: string): string {
  return url.startsWith("postgres") ? url.replace(/\/\/[^@/]*@/, "//***@") : url;
}
