import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { runNotFound } from "../engine/errors.ts";
import { runListFilter } from "../engine/list-filters.ts";
import { type RunStatus, toRunListItem, toRunView, withLease } from "../engine/workflows/view.ts";
import { uuidOrNull } from "../lib/ids.ts";
import { runUrl } from "../wire/urls.ts";
import { authenticated } from "./auth.ts";
import type { HttpDeps } from "./deps.ts";
import { nextCursor, pageParams, pageRequest } from "./paging.ts";
import { queryString } from "./query-string.ts";

/** Run ids are UUIDs; anything else cannot name a run, so it never reaches the store. */
function runId(value: string): string {
  const id = uuidOrNull(value);
  if (id === null) throw runNotFound();
  return id;
}

const ListQuery = queryString(
  Type.Object(
    {
      ...pageParams,
      ...runListFilter,
    },
    { additionalProperties: false },
  ),
);

export const runRoutes = (deps: HttpDeps) =>
  new Elysia({ name: "runs" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get(
      "/runs",
      async ({ query: q, principal }) => {
        const page = await deps.engine.runs.list(principal, {
          ...pageRequest(q),
          workflow: q.workflow,
          status: q.status as RunStatus | undefined,
        });
        return {
          items: page.items.map((run) => ({ ...toRunListItem(run), statusUrl: runUrl(deps.publicUrl(), run.id) })),
          nextCursor: nextCursor(page),
        };
      },
      { query: ListQuery },
    )
    .get("/runs/:id", async ({ params, principal }) => {
      const { run, steps, logs } = await deps.engine.runs.get(principal, runId(params.id));
      return withLease(toRunView(run, steps, logs), run, principal);
    })
    .post("/runs/:id/cancel", async ({ params, principal }) => {
      const { run, steps, logs } = await deps.engine.runs.cancel(principal, runId(params.id));
      return withLease(toRunView(run, steps, logs), run, principal);
    });
