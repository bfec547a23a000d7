import type { Store } from "./store.ts";

/** `postgres://…` opens PostgreSQL; `sqlite:<path>` (or `file:<path>`) opens SQLite. Each dialect loads on demand. */
export async function openStore(databaseUrl: string): Promise<Store> {
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    const { openPostgresStore } = await import("./pg/open.ts");
    return openPostgresStore(databaseUrl);
  }
  const { openSqliteStore } = await import("./sqlite/open.ts");
  return openSqliteStore(databaseUrl.replace(/^(sqlite|file):(\/\/)?/, ""));
}
