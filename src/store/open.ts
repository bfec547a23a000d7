import { openPostgresStore } from "./pg/open.ts";
import { openSqliteStore } from "./sqlite/open.ts";
import type { Store } from "./types.ts";

/** `postgres://…` opens PostgreSQL; `sqlite:<path>` (or `file:<path>`) opens SQLite. */
export async function openStore(databaseUrl: string): Promise<Store> {
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) return openPostgresStore(databaseUrl);
  const path = databaseUrl.replace(/^(sqlite|file):(\/\/)?/, "");
  return openSqliteStore(path);
}
