import { Elysia } from "elysia";
import type { InvokeOutcome } from "../engine/engine.ts";
import { EngineError, invalidRequest } from "../engine/errors.ts";
import { toExecutionView } from "../engine/executions.ts";
import type { FileService, SentFile } from "../files/service.ts";
import type { ValidationIssue } from "../release/contract.ts";
import { authenticated } from "./auth.ts";
import { MiB, payloadTooLarge, readJsonBody } from "./body.ts";
import { executionUrl, type HttpDeps } from "./deps.ts";

export const INVOKE_BODY_LIMIT = 8 * MiB;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const actionRoutes = (deps: HttpDeps & { files: FileService; maxFileBytes: number }) =>
  new Elysia({ name: "actions" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get("/actions/:name/contract", ({ params }) => deps.engine.contract(params.name))
    .post("/actions/:name/invoke", async ({ params, request, principal, set }) => {
      const multipart = request.headers.get("content-type")?.startsWith("multipart/form-data") ?? false;
      const { envelope, files } = multipart
        ? await readMultipart(request, deps.maxFileBytes)
        : { envelope: parseEnvelope(await readJsonBody(request, INVOKE_BODY_LIMIT)), files: undefined };
      let outcome: InvokeOutcome;
      try {
        outcome = await deps.engine.invoke({ principal, action: params.name, ...envelope, files });
      } catch (error) {
        throw invocationError(error, envelope.requestId);
      }
      // Only a multipart invocation can have uploads (a JSON one of the same request would conflict):
      // the lookup stays off the plain invoke path.
      const uploads = files ? (await deps.files.uploadsOf([outcome.execution.id])).get(outcome.execution.id) : [];
      const execution = toExecutionView(outcome.execution, uploads);
      set.status = outcome.settled ? 200 : 202;
      return {
        kind: execution.kind,
        execution,
        uploads: execution.uploads,
        statusUrl: executionUrl(deps.publicUrl(), execution.id),
      };
    });

/**
 * multipart/form-data: a part `request` with the JSON envelope (≤ 8 MiB) and one part per file field,
 * named by its input property. Each file part is capped by MAX_FILE_BYTES.
 */
async function readMultipart(request: Request, maxFileBytes: number) {
  let form: Awaited<ReturnType<Request["formData"]>>;
  try {
    form = await request.formData();
  } catch {
    throw invalidRequest([{ where: "", code: "invalid_multipart", message: "the multipart body could not be read" }]);
  }
  const part = form.get("request");
  const text = typeof part === "string" ? part : part ? await part.text() : null;
  if (text === null) {
    throw invalidRequest([
      { where: "/request", code: "required", message: "a part named request holds { requestId, input }" },
    ]);
  }
  if (new TextEncoder().encode(text).length > INVOKE_BODY_LIMIT) throw payloadTooLarge(INVOKE_BODY_LIMIT);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw invalidRequest([{ where: "/request", code: "invalid_json", message: "the request part is not valid JSON" }]);
  }
  const envelope = parseEnvelope(body);
  const files = new Map<string, SentFile>();
  for (const [field, value] of form.entries()) {
    if (field === "request" || typeof value === "string") continue;
    if (value.size > maxFileBytes) throw payloadTooLarge(maxFileBytes);
    const bytes = new Uint8Array(await value.arrayBuffer());
    files.set(field, {
      filename: value.name,
      contentType: value.type || "application/octet-stream",
      size: value.size,
      sha256: new Bun.CryptoHasher("sha256").update(bytes).digest("hex"),
      stream: () => new Blob([bytes]).stream(),
    });
  }
  return { envelope, files };
}

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
