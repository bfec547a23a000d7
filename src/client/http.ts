import { ActuateError, errorOf } from "./errors.ts";

export type TokenSource = string | (() => string | Promise<string>);

export type Fetch = (input: string, init?: RequestInit) => Promise<Response>;

export interface Transport {
  url: string;
  token: () => Promise<string>;
  fetch: Fetch;
  /** How long an idempotent call goes on asking, from its first failure (a network error, 502/503/504). */
  retryBudgetMs: number;
}

/** Answers that mean "nothing happened, or it is safe to ask again": the gateway or the database was away. */
const RETRIED_STATUS = new Set([502, 503, 504]);
const FIRST_BACKOFF_MS = 200;
// Low, so that a server back from a restart is noticed within ~2 s; the budget, not the backoff, bounds the wait.
const MAX_BACKOFF_MS = 2_000;

const tokenGetter = (token: TokenSource) => async () => (typeof token === "string" ? token : await token());

/** The one way every resource reaches the environment: its base URL, a fresh token per request, a fetch. */
export const transportOf = (options: {
  url: string;
  token: TokenSource;
  fetch?: Fetch;
  retryBudgetMs?: number;
}): Transport => ({
  url: options.url.replace(/\/+$/, ""),
  token: tokenGetter(options.token),
  fetch: options.fetch ?? ((input, init) => fetch(input, init)),
  retryBudgetMs: options.retryBudgetMs ?? 30_000,
});

export interface CallOptions {
  /** The request is idempotent (a read, or an invoke with its requestId): it may be sent again. */
  retry?: boolean;
  /** Ends the call at once, waiting or asking, with the signal's reason. */
  signal?: AbortSignal | undefined;
}

/**
 * Sends until an answer that is ok or final: with `retry`, a network failure or a 502/503/504 is sent
 * again after a jittered exponential backoff (or the answer's Retry-After) until the transport's budget
 * is spent; the last failure is then thrown as an ActuateError, as is any other refusal at once.
 */
export async function answered(
  transport: Transport,
  send: () => Promise<Response>,
  { retry, signal }: CallOptions,
): Promise<Response> {
  let failingSince = 0;
  for (let attempt = 1; ; attempt++) {
    const answer = await send().then(
      async (response) => (response.ok ? response : await errorOf(response)),
      (cause: Error) => {
        if (signal?.aborted) throw signal.reason;
        return new ActuateError("network_error", cause.message, 0);
      },
    );
    if (answer instanceof Response) return answer;
    failingSince ||= Date.now();
    const left = transport.retryBudgetMs - (Date.now() - failingSince);
    if (!retry || !(answer.status === 0 || RETRIED_STATUS.has(answer.status)) || left <= 0) throw answer;
    await pause(Math.min(left, answer.details.retryAfterMs ?? backoff(attempt)), signal);
  }
}

/** One JSON request (or a FormData body, sent as multipart), its answer parsed. */
export async function request<T>(
  transport: Transport,
  method: string,
  path: string,
  options: CallOptions & { body?: unknown } = {},
): Promise<{ status: number; body: T }> {
  const { body, signal } = options;
  // A form sets its own content type (multipart, with its boundary).
  const form = body instanceof FormData;
  const response = await answered(
    transport,
    async () => {
      const headers: Record<string, string> = { authorization: `Bearer ${await transport.token()}` };
      if (body !== undefined && !form) headers["content-type"] = "application/json";
      const sent = body === undefined || form ? (body as FormData | undefined) : JSON.stringify(body);
      return transport.fetch(`${transport.url}${path}`, {
        method,
        headers,
        body: sent ?? null,
        signal: signal ?? null,
      });
    },
    options,
  );
  return { status: response.status, body: (await response.json()) as T };
}

/** An idempotent request's answer body (reads, and writes that are safe to repeat). */
export const retried = <T>(transport: Transport, method: string, path: string, body?: unknown, signal?: AbortSignal) =>
  request<T>(transport, method, path, { body, retry: true, signal }).then((r) => r.body);

/** A query string of the filter's given values ("" when none). */
export const searchOf = (filter: Record<string, string | number | undefined>) => {
  const search = new URLSearchParams(
    Object.entries(filter)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]): [string, string] => [k, String(v)]),
  );
  return search.size > 0 ? `?${search}` : "";
};

const backoff = (attempt: number) =>
  Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
