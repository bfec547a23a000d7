import { Elysia } from "elysia";
import { authenticated } from "./auth.ts";
import type { HttpDeps } from "./deps.ts";

/** `GET /schedules`: the active release's schedules, their last and next ticks (service keys only). */
export const scheduleRoutes = (deps: HttpDeps) =>
  new Elysia({ name: "schedules" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get("/schedules", ({ principal }) => deps.engine.schedules(principal));
