import { Elysia } from "elysia";
import { foreground } from "../lib/foreground.ts";
import type { Log } from "../observe/log.ts";
import type { Telemetry } from "../observe/telemetry.ts";
import { NO_SPAN, type Span } from "../observe/tracing.ts";
import type { Principal } from "../sdk/index.ts";

/** What the server notes about a request in flight, for its log line, its metrics and its span. */
interface InFlight {
  start: number;
  /** Its entry in the process's foreground gauge (lib/foreground.ts). */
  foreground: number;
  span: Span;
  /** The request's id in the log: the caller's `X-Request-Id` when it looks like one, else a number. */
  reqId: string;
  /** The status of an answer made by the error handler (Elysia's `set.status` does not show it). */
  status?: number;
  executionId?: string;
  requestId?: string;
}

const inFlight = new WeakMap<Request, InFlight>();

/** Routes polled by machines: their lines are `debug`, so a balancer's checks do not fill the log. */
const QUIET_ROUTES = new Set(["/healthz", "/readyz", "/metrics"]);
/** A caller's own request id, when it looks like one (it goes into the log as it is). */
const REQUEST_ID = /^[\w.:-]{1,128}$/;
/** Otherwise requests are numbered in this process (the line names the instance too). */
let served = 0;

export const noteErrorStatus = (request: Request, status: number) => {
  const noted = inFlight.get(request);
  if (noted) noted.status = status;
};

/** The execution a request made or reached: named in its log line and span. */
export const noteExecution = (request: Request, executionId: string, requestId: string) => {
  const noted = inFlight.get(request);
  if (!noted) return;
  noted.executionId = executionId;
  noted.requestId = requestId;
  noted.span.setAttributes({ "actuate.execution_id": executionId });
};

/** The id a request's log lines carry (the caller's X-Request-Id when it looks like one), for lines logged elsewhere. */
export const requestIdOf = (request: Request): string | undefined => inFlight.get(request)?.reqId;

/** The span of the request (its executions are its children). */
export const requestSpan = (request: Request): Span | null => inFlight.get(request)?.span ?? null;

function statusOf(noted: InFlight, response: unknown, set: { status?: number | string }): number {
  if (noted.status !== undefined) return noted.status;
  if (response instanceof Response) return response.status;
  return typeof set.status === "number" ? set.status : 200;
}

/**
 * One log line, the request metrics and a span per request. `route` is the route's template
 * (`/executions/:id`), never the path, so metric labels stay bounded; a request no route took is `unmatched`.
 */
export const observeRequests = (telemetry: Telemetry, log: Log) =>
  new Elysia({ name: "observe-requests" })
    .onRequest(({ request }) => {
      const { tracer } = telemetry;
      const span = tracer.enabled
        ? tracer.start(request.method, request.headers.get("traceparent"), { "http.request.method": request.method })
        : NO_SPAN;
      const header = request.headers.get("x-request-id");
      const reqId = header && REQUEST_ID.test(header) ? header : `r${(++served).toString(36)}`;
      inFlight.set(request, { start: performance.now(), foreground: foreground.begin(), span, reqId });
    })
    .onAfterResponse({ as: "global" }, (context) => {
      const { request, set } = context;
      const noted = inFlight.get(request);
      if (!noted) return;
      inFlight.delete(request);
      foreground.end(noted.foreground);
      const route = (context as { route?: string }).route || "unmatched";
      const status = statusOf(noted, (context as { responseValue?: unknown }).responseValue, set);
      const seconds = (performance.now() - noted.start) / 1000;
      telemetry.httpAnswered(route, status, seconds);
      const principal = (context as { principal?: Principal }).principal;
      log(`${request.method} ${route} ${status}`, {
        level: status >= 500 ? "error" : QUIET_ROUTES.has(route) ? "debug" : "info",
        reqId: noted.reqId,
        method: request.method,
        route,
        status,
        durationMs: Math.round(seconds * 10_000) / 10,
        caller: principal?.kind,
        executionId: noted.executionId,
        requestId: noted.requestId,
      });
      noted.span.rename(`${request.method} ${route}`);
      noted.span.setAttributes({ "http.route": route, "http.response.status_code": status });
      if (status >= 500) noted.span.fail(`answered ${status}`);
      noted.span.end();
    });
