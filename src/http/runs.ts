import { Elysia } from "elysia";
import { runNotFound } from "../engine/errors.ts";
import { toRunView } from "../engine/workflows/view.ts";
import { authenticated } from "./auth.ts";
import type { HttpDeps } from "./deps.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Run ids are UUIDs; anything else cannot name a run, so it never reaches the store. */
function runId(value: string): string {
  const lower = value.toLowerCase();
  if (!UUID.test(lower)) throw runNotFound();
  return lower;
}

export const runRoutes = (deps: HttpDeps) =>
  new Elysia({ name: "runs" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get("/runs/:id", async ({ params, principal }) => {
      const { run, steps } = await deps.engine.run(principal, runId(params.id));
      return toRunView(run, steps);
    })
    .post("/runs/:id/cancel", async ({ params, principal }) => {
      const { run, steps } = await deps.engine.cancelRun(principal, runId(params.id));
      return toRunView(run, steps);
    });
