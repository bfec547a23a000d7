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
  /**
   * Stops: the ready drain (`readyDrainMs`, 0 by default), then no new connections; requests in flight and
   * their handlers have DRAIN_MS, then the handlers' ctx.signal fires and they have SIGNAL_GRACE_MS to end.
   */
  stop(options?: StopOptions): Promise<void>;
}

/** How a server stops; none: at once (tests stopping a server in-process, `dev`). */
export interface StopOptions {
  /**
   * First, for this long, /readyz answers 503 `draining` while every request is served as usual, so a load
   * balancer's health check takes the server out before it stops accepting (a signalled `start`: DRAIN_READY_MS).
   */
  readyDrainMs?: number;
  /** Aborted (a second signal): the waits left, the ready drain and DRAIN_MS, end at once. */
  hurry?: AbortSignal;
}

/** A server that serves environment 1: every single-mode one, a hosting one whose SERVE_ENVIRONMENTS takes it. */
export type ServingSingle = RunningServer & { releases: ReleaseRegistry; engine: Engine };

export function servingSingle(server: RunningServer): ServingSingle {
  const { releases, engine } = server;
  if (!releases || !engine) throw new Error("this server does not serve environment 1");
  return { ...server, releases, engine };
}

/** How long a stopping server gives the answers of its last handlers to be sent, once they have ended. */
export const ANSWER_MS = 100;
/**
 * How long handlers have, once their ctx.signal fired, to end and store how they ended (and workflow passes,
 * once halted, to stop before their leases are let go). One still running is failed later as interrupted.
 */
export const SIGNAL_GRACE_MS = 1_000;

/** Resolves after `ms`, or as soon as `hurry` aborts. */
export function waitUnlessHurried(ms: number, hurry?: AbortSignal): Promise<void> {
  if (ms <= 0 || hurry?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      hurry?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    hurry?.addEventListener("abort", done);
  });
}
