import { Elysia } from "elysia";
import type { InvokeOutcome } from "../engine/engine.ts";
import { EngineError, invalidRequest } from "../engine/errors.ts";
import { toExecutionView } from "../engine/executions.ts";
import type { ValidationIssue } from "../release/contract.ts";
import { authenticated } from "./auth.ts";
import { MiB, readJsonBody } from "./body.ts";
import { executionUrl, type HttpDeps } from "./deps.ts";

export const INVOKE_BODY_LIMIT = 8 * MiB;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const actionRoutes = (deps: HttpDeps) =>
  new Elysia({ name: "actions" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get("/actions/:name/contract", ({ params }) => deps.engine.contract(params.name))
    .post("/actions/:name/invoke", async ({ params, request, principal, set }) => {
      const envelope = parseEnvelope(await readJsonBody(request, INVOKE_BODY_LIMIT));
      let outcome: InvokeOutcome;
      try {
        outcome = await deps.engine.invoke({ principal, action: params.name, ...envelope });
      } catch (error) {
        throw invocationError(error, envelope.requestId);
      }
      const execution = toExecutionView(outcome.execution);
      set.status = outcome.settled ? 200 : 202;
      return {
        kind: execution.kind,
        execution,
        uploads: execution.uploads,
        statusUrl: executionUrl(deps.publicUrl(), execution.id),
      };
    });

/** `{ requestId, input }`: requestId a UUID (compared lower-cased), input an object, nothing else. */
function parseEnvelope(body: unknown): { requestId: string; input: Record<string, unknown> } {
  if (!isPlainObject(body)) {
    throw invalidRequest([
      { where: "", code: "invalid_type", message: "the body must be a JSON object { requestId, input }" },
    ]);
  }
  const issues: ValidationIssue[] = [];
  const { requestId, input, ...rest } = body;
  if (requestId === undefined) {
    issues.push({
      where: "/requestId",
      code: "required",
      message: "requestId is required (a UUID chosen by the caller)",
    });
  } else if (typeof requestId !== "string" || !UUID.test(requestId)) {
    issues.push({ where: "/requestId", code: "invalid_format", message: "requestId must be a UUID" });
  }
  if (input === undefined) issues.push({ where: "/input", code: "required", message: "input is required (an object)" });
  else if (!isPlainObject(input))
    issues.push({ where: "/input", code: "invalid_type", message: "input must be an object" });
  for (const key of Object.keys(rest)) {
    issues.push({ where: `/${key}`, code: "unknown_property", message: `unknown property ${JSON.stringify(key)}` });
  }
  if (issues.length > 0) throw invalidRequest(issues);
  return { requestId: (requestId as string).toLowerCase(), input: input as Record<string, unknown> };
}

/** Invocation errors name the request (and the execution, when one exists) so the caller can follow up. */
function invocationError(error: unknown, requestId: string): unknown {
  if (!(error instanceof EngineError)) return error;
  return new EngineError(error.code, error.message, { executionId: null, ...error.details, requestId });
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
