import type { Config } from "../config.ts";
import { openStore } from "../store/open.ts";
import type { Store } from "../store/store.ts";

/** Opens the configured database for one CLI command and closes it after, whatever happens. */
export async function withStore<T>(config: Config, use: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(config.databaseUrl);
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

/** The database as a log line may show it: a PostgreSQL URL without its credentials. */
export function describeDatabase(url: string): string {
  return url.startsWith("postgres") ? url.replace(/\/\/[^@/]*@/, "//***@") : url;
}
