import { ActuateError, errorOf } from "./errors.ts";

export type TokenSource = string | (() => string | Promise<string>);

export type Fetch = (input: string, init?: RequestInit) => Promise<Response>;

export interface Transport {
  url: string;
  token: () => Promise<string>;
  fetch: Fetch;
}

/** Answers that mean "nothing happened, or it is safe to ask again": the gateway or the database was away. */
const RETRIED_STATUS = new Set([502, 503, 504]);
const ATTEMPTS = 5;
const FIRST_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 5_000;

const tokenGetter = (token: TokenSource) => async () => (typeof token === "string" ? token : await token());

/** The one way every resource reaches the environment: its base URL, a fresh token per request, a fetch. */
export const transportOf = (options: { url: string; token: TokenSource; fetch?: Fetch }): Transport => ({
  url: options.url.replace(/\/+$/, ""),
  token: tokenGetter(options.token),
  fetch: options.fetch ?? ((input, init) => fetch(input, init)),
});

/**
 * One JSON request (or a FormData body, sent as multipart). `retry`: the request is idempotent (a read,
 * or an invoke with its requestId), so a network failure or a 502/503/504 is tried again with jittered
 * exponential backoff (or Retry-After).
 */
export async function request<T>(
  transport: Transport,
  method: string,
  path: string,
  options: { body?: unknown; retry?: boolean; signal?: AbortSignal | undefined } = {},
): Promise<{ status: number; body: T }> {
  let lastError: ActuateError | null = null;
  for (let attempt = 0; attempt < (options.retry ? ATTEMPTS : 1); attempt++) {
    if (attempt > 0) await pause(lastError?.details.retryAfterMs ?? backoff(attempt), options.signal);
    let response: Response;
    try {
      const headers: Record<string, string> = { authorization: `Bearer ${await transport.token()}` };
      // A form sets its own content type (multipart, with its boundary).
      const form = options.body instanceof FormData;
      if (options.body !== undefined && !form) headers["content-type"] = "application/json";
      response = await transport.fetch(`${transport.url}${path}`, {
        method,
        headers,
        body: options.body === undefined ? null : form ? (options.body as FormData) : JSON.stringify(options.body),
        signal: options.signal ?? null,
      });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      lastError = new ActuateError("network_error", (error as Error).message, 0);
      continue;
    }
    if (response.ok) return { status: response.status, body: (await response.json()) as T };
    lastError = await errorOf(response);
    if (!RETRIED_STATUS.has(response.status)) throw lastError;
  }
  throw lastError ?? new ActuateError("network_error", "no answer", 0);
}

/** An idempotent request's answer body (reads, and writes that are safe to repeat). */
export const retried = <T>(transport: Transport, method: string, path: string, body?: unknown) =>
  request<T>(transport, method, path, { body, retry: true }).then((r) => r.body);

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
