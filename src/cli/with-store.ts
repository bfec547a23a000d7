import type { Config } from "../config.ts";
import { openConfiguredStore } from "../startup.ts";
import type { Store } from "../store/store.ts";

/** Opens the configured database for one CLI command and closes it after, whatever happens. */
export async function withStore<T>(config: Config, use: (store: Store) => Promise<T>): Promise<T> {
  const store = await openConfiguredStore(config);
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}
