import type { Store } from "./store.ts";

/** The parts of a store that belong to one environment: each dialect's open.ts makes them per id. */
export type EnvironmentParts = Pick<
  Store,
  | "executions"
  | "executionLogs"
  | "retention"
  | "runs"
  | "releases"
  | "tokens"
  | "data"
  | "files"
  | "schedules"
  | "delayedInvocations"
  | "stats"
  | "variables"
>;

/** What every view shares: the service-wide parts and the database's own handles. */
export type ServiceParts = Omit<Store, keyof EnvironmentParts | "environmentId" | "environment">;

/**
 * Composes a dialect's store: `partsOf(id)` builds an environment's parts (cheaply: shared statements,
 * the id bound), made once per id and kept, so `store.environment(id)` is a map lookup after the first.
 */
export function storeWithEnvironments(service: ServiceParts, partsOf: (id: number) => EnvironmentParts): Store {
  const views = new Map<number, Store>();
  const view = (id: number): Store => {
    let found = views.get(id);
    if (!found) {
      if (!Number.isSafeInteger(id) || id < 1) throw new Error(`no environment has the id ${id}`);
      found = { ...service, ...partsOf(id), environmentId: id, environment: view };
      views.set(id, found);
    }
    return found;
  };
  return view(1);
}
