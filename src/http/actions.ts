import { Elysia } from "elysia";
import { invalidRequest } from "../engine/errors.ts";
import { toExecutionView } from "../engine/executions.ts";
import type { InvokeOutcome } from "../engine/invocation.ts";
import type { SentFile } from "../files/service.ts";
import { TooLarge } from "../files/storage.ts";
import { PublicError } from "../lib/errors.ts";
import { uuidOrNull } from "../lib/ids.ts";
import { nestsDeeperThan } from "../lib/json-depth.ts";
import { isObject } from "../lib/values.ts";
import type { ActionContract, ValidationIssue } from "../release/contract.ts";
import { executionUrl, runUrl } from "../wire/urls.ts";
import { authenticated } from "./auth.ts";
import { BodyAborted, MiB, payloadTooLarge, readJsonBody, tooDeep } from "./body.ts";
import type { HttpDeps } from "./deps.ts";
import { holdingConnection } from "./long-wait.ts";
import { MalformedMultipart, type MultipartForm, readMultipart, UnexpectedPart } from "./multipart.ts";
import { noteExecution, requestSpan } from "./observe.ts";
import { Spool } from "./spool.ts";

export const INVOKE_BODY_LIMIT = 8 * MiB;

/** Parts of one multipart invocation: the request and the file fields, with room to spare. */
const MAX_PARTS = 100;

export const actionRoutes = (deps: HttpDeps & { maxFileBytes: number; maxMultipartBytes: number; spoolDir: string }) =>
  new Elysia({ name: "actions" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get("/actions", ({ principal }) => ({
      items: deps.engine.actions(principal).map(({ name, kind, description, contractHash, access }) => ({
        name,
        kind,
        description,
        contractHash,
        access,
      })),
    }))
    .get("/actions/:name/contract", ({ params, principal }) => deps.engine.contract(principal, params.name))
    .post("/actions/:name/invoke", async ({ params, request, principal, set, server }) => {
      const multipart = request.headers.get("content-type")?.startsWith("multipart/form-data") ?? false;
      const spool = multipart ? new Spool(deps.spoolDir) : undefined;
      let requestId: string | null = null;
      try {
        const { envelope, files } = spool
          ? await readInvocationForm(request, deps.engine.contract(principal, params.name), deps, spool)
          : { envelope: parseEnvelope(await readJsonBody(request, INVOKE_BODY_LIMIT)), files: undefined };
        requestId = envelope.requestId;
        const outcome: InvokeOutcome = await holdingConnection(server, request, () =>
          deps.engine.invoke({ principal, action: params.name, ...envelope, files, trace: requestSpan(request) }),
        );
        noteExecution(request, outcome.execution.id, envelope.requestId);
        const execution = toExecutionView(outcome.execution, outcome.uploads);
        if (outcome.runId !== undefined) {
          // A workflow answers once its run is admitted, whatever the run has done since.
          set.status = 202;
          return {
            kind: execution.kind,
            runId: outcome.runId,
            execution,
            uploads: execution.uploads,
            statusUrl: runUrl(deps.publicUrl(), outcome.runId),
          };
        }
        set.status = outcome.settled ? 200 : 202;
        return {
          kind: execution.kind,
          execution,
          uploads: execution.uploads,
          statusUrl: executionUrl(deps.publicUrl(), execution.id),
        };
      } catch (error) {
        throw invocationError(error, requestId);
      } finally {
        // The engine has stored what it keeps (or nothing, on a replay or refusal) by now.
        await spool?.dispose();
      }
    });

/**
 * multipart/form-data, read as it streams: a part `request` with the JSON envelope (≤ 8 MiB) and one
 * part per file field of the action's contract, named by its input property; any other part, or one
 * sent twice, is refused when its headers arrive. Each file part goes to a spool file (counted,
 * hashed, capped by MAX_FILE_BYTES), the whole body is capped by MAX_MULTIPART_BYTES; the caller
 * disposes of the spool however the invocation ends.
 */
async function readInvocationForm(
  request: Request,
  contract: ActionContract,
  limits: { maxFileBytes: number; maxMultipartBytes: number },
  spool: Spool,
) {
  const fileFields = contract.files.map((file) => file.field);
  let form: MultipartForm;
  try {
    form = await readMultipart(
      request,
      {
        fields: ["request"],
        files: fileFields,
        maxFieldBytes: INVOKE_BODY_LIMIT,
        maxFileBytes: limits.maxFileBytes,
        maxBodyBytes: limits.maxMultipartBytes,
        maxParts: MAX_PARTS,
      },
      spool,
    );
  } catch (error) {
    if (error instanceof TooLarge) throw payloadTooLarge(error.limit);
    if (error instanceof MalformedMultipart) {
      throw invalidRequest([{ where: "", code: "invalid_multipart", message: `the multipart body: ${error.message}` }]);
    }
    if (error instanceof UnexpectedPart) throw unexpectedPart(error, contract.name, fileFields);
    throw error;
  }
  const text = form.fields.get("request");
  if (text === undefined) {
    throw invalidRequest([
      { where: "/request", code: "required", message: "a part named request holds { requestId, input }" },
    ]);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw invalidRequest([{ where: "/request", code: "invalid_json", message: "the request part is not valid JSON" }]);
  }
  if (nestsDeeperThan(body)) throw tooDeep("/request");
  const files = new Map<string, SentFile>();
  for (const [field, file] of form.files) {
    files.set(field, {
      filename: file.filename,
      contentType: file.mediaType,
      size: file.size,
      sha256: file.sha256,
      stream: file.stream,
    });
  }
  return { envelope: parseEnvelope(body), files };
}

/** 400 naming the part; for one the contract does not name, the parts the action does take. */
function unexpectedPart(error: UnexpectedPart, action: string, fileFields: string[]) {
  const where = `/${error.part}`;
  if (error.repeated) {
    // The reader's own words: `the part "<name>" is sent twice`.
    return invalidRequest([{ where, code: "repeated_part", message: error.message }]);
  }
  const expected = ["request", ...fileFields].map((name) => JSON.stringify(name)).join(", ");
  const message = `${action} takes no part named ${JSON.stringify(error.part)}; its parts are ${expected}`;
  return invalidRequest([{ where, code: "unknown_part", message }]);
}

/** `{ requestId, input }`: requestId a UUID (compared lower-cased), input an object, nothing else. */
function parseEnvelope(body: unknown): { requestId: string; input: Record<string, unknown> } {
  if (!isObject(body)) {
    throw invalidRequest([
      { where: "", code: "invalid_type", message: "the body must be a JSON object { requestId, input }" },
    ]);
  }
  const issues: ValidationIssue[] = [];
  const { requestId, input, ...rest } = body;
  const readable = uuidOrNull(requestId);
  if (requestId === undefined) {
    issues.push({
      where: "/requestId",
      code: "required",
      message: "requestId is required (a UUID chosen by the caller)",
    });
  } else if (readable === null) {
    issues.push({ where: "/requestId", code: "invalid_format", message: "requestId must be a UUID" });
  }
  if (input === undefined) issues.push({ where: "/input", code: "required", message: "input is required (an object)" });
  else if (!isObject(input)) issues.push({ where: "/input", code: "invalid_type", message: "input must be an object" });
  for (const key of Object.keys(rest)) {
    issues.push({ where: `/${key}`, code: "unknown_property", message: `unknown property ${JSON.stringify(key)}` });
  }
  if (issues.length > 0 || readable === null) {
    const refusal = invalidRequest(issues);
    throw new PublicError(refusal.code, refusal.message, { ...refusal.fields, requestId: readable });
  }
  return { requestId: readable, input: input as Record<string, unknown> };
}

/**
 * Every invocation error names the request and the execution (null when the body had no readable
 * requestId, or no execution exists), so the caller can follow up.
 */
function invocationError(error: unknown, requestId: string | null): unknown {
  // Nobody reads the answer to a body that broke off: it stays what it is, to be logged as such.
  if (error instanceof BodyAborted || !(error instanceof PublicError)) return error;
  return new PublicError(error.code, error.message, {
    requestId,
    executionId: null,
    ...error.fields,
    ...(requestId ? { requestId } : {}),
  });
}
