import type { Engine } from "../engine/engine.ts";
import type { Route } from "../http/methods.ts";
import type { ReleaseRegistry } from "../release/registry.ts";
import type { Store } from "../store/store.ts";
import type { EnvironmentRuntimes } from "./hosted-environments.ts";
import type { ServiceLoops } from "./service-loops.ts";

/** A started server, either mode. */
export interface RunningServer {
  /** Where a client on this machine reaches it (hosting mode: the bound address; its sites are by host). */
  url: string;
  store: Store;
  /**
   * Environment 1's (single mode's only one; hosting mode's, named HANDLE), or null: a hosting instance
   * whose SERVE_ENVIRONMENTS leaves it out composes nothing of it (its release's code does not run here).
   */
  releases: ReleaseRegistry | null;
  engine: Engine | null;
  /** The HTTP routes an environment answers, as registered (test/http/openapi.test.ts holds /openapi.json to them). */
  routes: readonly Route[];
  /** Hosting mode: its composed environments (the control API evicts a deleted one here first). */
  environments?: EnvironmentRuntimes;
  /** Hosting mode: the process's loops (their counts of statements, for tests and figures). */
  serviceLoops?: ServiceLoops;
  stop(): Promise<void>;
}

/** A server that serves environment 1: every single-mode one, a hosting one whose SERVE_ENVIRONMENTS takes it. */
export type ServingSingle = RunningServer & { releases: ReleaseRegistry; engine: Engine };

export function servingSingle(server: RunningServer): ServingSingle {
  const { releases, engine } = server;
  if (!releases || !engine) throw new Error("this server does not serve environment 1");
  return { ...server, releases, engine };
}

/** How long a stopping server lets requests in flight finish, then handlers store how they ended. */
export const DRAIN_MS = 5_000;
/** How long a stopping server gives the answers of its last handlers to be sent, once they have ended. */
export const ANSWER_MS = 100;
