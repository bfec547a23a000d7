import { join } from "node:path";
import { createApp } from "./app.ts";
import { Authenticator } from "./auth/authenticator.ts";
import { type Config, localUrl } from "./config.ts";
import { Engine } from "./engine/engine.ts";
import { ReleaseRegistry } from "./release/registry.ts";
import { openStore } from "./store/open.ts";
import type { Store } from "./store/types.ts";

export interface RunningServer {
  url: string;
  store: Store;
  releases: ReleaseRegistry;
  engine: Engine;
  stop(): Promise<void>;
}

export const bundlesDir = (config: Config) => join(config.dataDir, "bundles");

/** Start-up: config → store → active release → HTTP. */
export async function startServer(
  config: Config,
  options: { log?: (message: string) => void; store?: Store } = {},
): Promise<RunningServer> {
  const log = options.log ?? ((message: string) => console.log(message));
  const store = options.store ?? (await openStore(config.databaseUrl));
  const releases = new ReleaseRegistry(store, bundlesDir(config), log);
  await releases.refresh();
  releases.watch(config.releasePollMs);
  const engine = new Engine({ store, release: () => releases.current(), waitMs: config.waitMs, log });
  const auth = new Authenticator(store, config.serviceKeys);

  let publicUrl = config.publicUrl ?? "";
  const app = createApp({ engine, auth, publicUrl: () => publicUrl, log });
  app.listen({ port: config.port, hostname: config.host });
  const port = app.server?.port ?? config.port;
  publicUrl ||= localUrl(config.host, port);

  return {
    url: localUrl(config.host, port),
    store,
    releases,
    engine,
    async stop() {
      releases.stop();
      await app.stop();
      await engine.shutdown();
      if (!options.store) await store.close();
    },
  };
}
