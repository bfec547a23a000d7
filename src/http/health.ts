import { Elysia } from "elysia";

/** What /readyz checks, each answering whether its dependency can be reached now. */
export interface ReadinessChecks {
  database: () => Promise<void>;
  storage: () => Promise<void>;
  /** Whether the server is stopping: it still serves, but a load balancer should send requests elsewhere. */
  draining?: () => boolean;
}

/** A check that has not answered by then counts as down: a load balancer must not wait on a hung database. */
const CHECK_TIMEOUT_MS = 2_000;

async function passes(check: () => Promise<void>): Promise<boolean> {
  let timer: Timer | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([check().then(() => true), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * For load balancers and orchestrators, no credentials. `/healthz` is liveness (the process answers;
 * no store access). `/readyz` is readiness: the database and the file store can be reached now; 503
 * with what is down otherwise, so traffic goes elsewhere until it recovers; 503 `draining` once the server
 * is stopping (everything else is still served then, for DRAIN_READY_MS), without asking the checks.
 */
export const healthRoutes = (checks: ReadinessChecks) =>
  new Elysia({ name: "health" })
    .get("/healthz", () => ({ ok: true }))
    .get("/readyz", async ({ set }) => {
      if (checks.draining?.()) {
        set.status = 503;
        set.headers["retry-after"] = "5";
        return { ok: false, error: "draining", message: "this server is stopping: send requests to another" };
      }
      const [database, storage] = await Promise.all([passes(checks.database), passes(checks.storage)]);
      const state = { database: database ? "ok" : "unavailable", storage: storage ? "ok" : "unavailable" };
      if (database && storage) return { ok: true, ...state };
      set.status = 503;
      set.headers["retry-after"] = "5";
      const down = [database ? "" : "the database", storage ? "" : "the file store"].filter(Boolean).join(" and ");
      return { ok: false, error: "not_ready", message: `${down} cannot be reached`, ...state };
    });
