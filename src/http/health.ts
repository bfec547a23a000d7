import { Elysia } from "elysia";

/** For load balancers: no credentials, no store access. */
export const healthRoutes = new Elysia({ name: "health" }).get("/healthz", () => ({ ok: true }));
