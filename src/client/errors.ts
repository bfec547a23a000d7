/** One issue of a refused request: where in the request, and what is wrong there. */
export interface Issue {
  where: string;
  code: string;
  message: string;
}

/**
 * Every refusal the server answers, and every transport failure the client gives up on, as one
 * error type: `code` is the server's stable code (`access_denied`, `REQUEST_CONFLICT`, …) or
 * `network_error`, `status` its HTTP status (0 when nothing was answered).
 */
export class ActuateError extends Error {
  override name = "ActuateError";

  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly details: {
      issues?: Issue[] | undefined;
      executionId?: string | null | undefined;
      requestId?: string | null | undefined;
      retryAfterMs?: number | undefined;
    } = {},
  ) {
    super(message);
  }

  get issues(): Issue[] {
    return this.details.issues ?? [];
  }

  get executionId(): string | null {
    return this.details.executionId ?? null;
  }

  get requestId(): string | null {
    return this.details.requestId ?? null;
  }
}

/** An error body as the server sends it, over HTTP and on the session socket (`{ error, message, … }`). */
export interface ErrorBody {
  error?: string;
  message?: string;
  details?: { issues?: Issue[] };
  executionId?: string | null;
  requestId?: string | null;
}

export const errorOfBody = (body: ErrorBody | null, status: number, retryAfterMs?: number) =>
  new ActuateError(body?.error ?? `http_${status}`, body?.message ?? `the server answered ${status}`, status, {
    issues: body?.details?.issues,
    executionId: body?.executionId,
    requestId: body?.requestId,
    retryAfterMs,
  });

/** The error an answer carries (every error body is `{ ok: false, error, message, … }`). */
export async function errorOf(response: Response): Promise<ActuateError> {
  const body = (await response.json().catch(() => null)) as ErrorBody | null;
  const retryAfter = Number(response.headers.get("retry-after"));
  return errorOfBody(body, response.status, retryAfter > 0 ? retryAfter * 1000 : undefined);
}
