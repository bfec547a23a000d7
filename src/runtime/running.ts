import type { Engine } from "../engine/engine.ts";
import type { Route } from "../http/methods.ts";
import type { ReleaseRegistry } from "../release/registry.ts";
import type { Store } from "../store/store.ts";

/** A started server, either mode. */
export interface RunningServer {
  /** Where a client on this machine reaches it (hosting mode: the bound address; its sites are by host). */
  url: string;
  store: Store;
  /** Environment 1's: single mode's only one, hosting mode's environment named HANDLE. */
  releases: ReleaseRegistry;
  engine: Engine;
  /** The HTTP routes an environment answers, as registered (test/http/openapi.test.ts holds /openapi.json to them). */
  routes: readonly Route[];
  stop(): Promise<void>;
}

/** How long a stopping server lets requests in flight finish, then handlers store how they ended. */
export const DRAIN_MS = 5_000;
/** How long a stopping server gives the answers of its last handlers to be sent, once they have ended. */
export const ANSWER_MS = 100;
