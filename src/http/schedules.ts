import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { scheduledNotFound } from "../engine/errors.ts";
import { SCHEDULED_STATUSES, type ScheduledStatus, toScheduledView } from "../engine/schedules/view.ts";
import { uuidOrNull } from "../lib/ids.ts";
import { authenticated } from "./auth.ts";
import type { HttpDeps } from "./deps.ts";
import { nextCursor, pageParams, pageRequest } from "./paging.ts";
import { queryString } from "./query-string.ts";

/** Scheduled invocation ids are UUIDs; anything else cannot name one, so it never reaches the store. */
function scheduledId(value: string): string {
  const id = uuidOrNull(value);
  if (id === null) throw scheduledNotFound();
  return id;
}

const ListQuery = queryString(
  Type.Object(
    { ...pageParams, status: Type.Optional(Type.Union(SCHEDULED_STATUSES.map((s) => Type.Literal(s)))) },
    { additionalProperties: false },
  ),
);

/**
 * `GET /schedules`: the active release's schedules (service keys only). `GET /scheduled`,
 * `GET /scheduled/{id}`, `DELETE /scheduled/{id}`: delayed invocations, the caller's own (all for a service key).
 */
export const scheduleRoutes = (deps: HttpDeps) =>
  new Elysia({ name: "schedules" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get("/schedules", ({ principal }) => deps.engine.scheduling.schedules(principal))
    .get(
      "/scheduled",
      async ({ query: q, principal }) => {
        const page = await deps.engine.scheduling.list(principal, {
          ...pageRequest(q),
          status: q.status as ScheduledStatus | undefined,
        });
        return {
          items: page.items.map(toScheduledView),
          nextCursor: nextCursor(page),
        };
      },
      { query: ListQuery },
    )
    .get("/scheduled/:id", async ({ params, principal }) =>
      toScheduledView(await deps.engine.scheduling.get(principal, scheduledId(params.id))),
    )
    .delete("/scheduled/:id", async ({ params, principal }) =>
      toScheduledView(await deps.engine.scheduling.cancel(principal, scheduledId(params.id))),
    );
