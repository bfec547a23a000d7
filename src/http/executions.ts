import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { executionNotFound, invalidRequest } from "../engine/errors.ts";
import { toLogLineView } from "../engine/execution-log.ts";
import {
  type Execution,
  type ExecutionStatus,
  type ExecutionView,
  toExecutionSummary,
  toExecutionView,
  withInstance,
} from "../engine/executions.ts";
import { executionListFilter } from "../engine/list-filters.ts";
import type { FileService } from "../files/service.ts";
import { PublicError } from "../lib/errors.ts";
import { uuidOrNull } from "../lib/ids.ts";
import type { Principal } from "../sdk/index.ts";
import { executionUrl } from "../wire/urls.ts";
import type { Upload } from "../wire/views.ts";
import { authenticated } from "./auth.ts";
import type { HttpDeps } from "./deps.ts";
import { InstantParam, instantMs } from "./instants.ts";
import { holdingConnection } from "./long-wait.ts";
import { decodeSeqCursor, encodeSeqCursor, nextCursor, pageParams, pageRequest } from "./paging.ts";
import { queryString } from "./query-string.ts";

const ListQuery = queryString(
  Type.Object(
    {
      ...pageParams,
      ...executionListFilter,
      since: Type.Optional(InstantParam),
      until: Type.Optional(InstantParam),
    },
    { additionalProperties: false },
  ),
);

/** A log page is 200 lines unless `?limit` asks for fewer. */
const LOG_PAGE = 200;

const LogQuery = queryString(Type.Object(pageParams, { additionalProperties: false }));

/** `since`/`until` in milliseconds; an empty range (since not before until) is refused, not answered empty. */
function timeRange(sinceParam: string | undefined, untilParam: string | undefined) {
  const since = instantMs(sinceParam, "since");
  const until = instantMs(untilParam, "until");
  if (since !== undefined && until !== undefined && since >= until) {
    throw invalidRequest([{ where: "/query/until", code: "invalid", message: "until: must be later than since" }]);
  }
  return { since, until };
}

function callerOf(caller: string): Principal {
  const colon = caller.indexOf(":");
  return { kind: caller.slice(0, colon) as Principal["kind"], id: caller.slice(colon + 1) };
}

/** Execution ids and request ids are UUIDs; anything else cannot name an execution, so it never reaches the store. */
function uuidOrNotFound(value: string): string {
  const id = uuidOrNull(value);
  if (id === null) throw executionNotFound();
  return id;
}

export const executionRoutes = (deps: HttpDeps & { files: FileService }) => {
  /** Views of executions with their uploads, looked up in one query for the lot. */
  const views = async <R extends Execution>(
    rows: R[],
    toView: (row: R, uploads?: Upload[]) => ExecutionView,
    principal: Principal,
  ) => {
    const uploads = await deps.files.uploadsOf(rows.map((r) => r.id));
    return rows.map((row) => ({
      ...withInstance(toView(row, uploads.get(row.id)), row, principal),
      statusUrl: executionUrl(deps.publicUrl(), row.id),
    }));
  };
  const view = async (row: Execution, principal: Principal) => (await views([row], toExecutionView, principal))[0];
  return new Elysia({ name: "executions" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get(
      "/executions",
      async ({ query: q, principal }) => {
        const page = await deps.engine.executions.list(principal, {
          ...pageRequest(q),
          action: q.action,
          status: q.status as ExecutionStatus | undefined,
          ...timeRange(q.since, q.until),
          caller: q.caller === undefined ? undefined : callerOf(q.caller),
        });
        return {
          items: await views(page.items, toExecutionSummary, principal),
          nextCursor: nextCursor(page),
        };
      },
      { query: ListQuery },
    )
    .get("/executions/requests/:requestId", async ({ params, principal }) =>
      view(await deps.engine.executions.getByRequest(principal, uuidOrNotFound(params.requestId)), principal),
    )
    .get("/executions/:id", async ({ params, principal }) =>
      view(await deps.engine.executions.get(principal, uuidOrNotFound(params.id)), principal),
    )
    .get(
      "/executions/:id/logs",
      async ({ params, query: q, principal }) => {
        const afterSeq = q.cursor === undefined ? -1 : decodeSeqCursor(q.cursor);
        const limit = q.limit ?? LOG_PAGE;
        const { lines, ended } = await deps.engine.executions.logs(principal, uuidOrNotFound(params.id), {
          afterSeq,
          limit,
        });
        const last = lines.at(-1)?.seq ?? afterSeq;
        // A running execution may log more: its cursor stays, to ask again from where this page ended.
        const more = lines.length === limit || !ended;
        return { items: lines.map(toLogLineView), nextCursor: more ? encodeSeqCursor(last) : null };
      },
      { query: LogQuery },
    )
    .get("/executions/:id/result", async ({ params, principal, request, server }) => {
      const id = uuidOrNotFound(params.id);
      const { execution, settled } = await holdingConnection(server, request, () =>
        deps.engine.executions.awaitResult(principal, id),
      );
      if (!settled) {
        throw new PublicError("execution_result_timeout", "the execution has not ended yet; follow statusUrl", {
          executionId: execution.id,
          requestId: execution.requestId,
          statusUrl: executionUrl(deps.publicUrl(), execution.id),
        });
      }
      return view(execution, principal);
    });
};
