import { ReleaseError } from "../release/errors.ts";

/** An environment the CLI reaches over HTTP (`--url`), with the credential in ACTUATE_TOKEN. */
export interface Remote {
  /** The URL as given, without a trailing slash. */
  url: string;
  /** The JSON answer of `path`; an error answer throws, naming the request and the server's message. */
  request<T>(path: string, init?: { method?: string; body?: unknown }): Promise<T>;
}

export function remote(url: string): Remote {
  const base = url.replace(/\/+$/, "");
  const token = process.env.ACTUATE_TOKEN;
  if (!token) throw new ReleaseError("--url reaches the environment with ACTUATE_TOKEN=<key or user token>");
  return {
    url: base,
    async request<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      if (init.body !== undefined) headers["content-type"] = "application/json";
      const target = `${base}${path}`;
      const response = await fetch(target, {
        method: init.method ?? "GET",
        headers,
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
      }).catch((error: Error) => {
        throw new ReleaseError(`${target} cannot be reached: ${error.message}`);
      });
      const text = await response.text();
      if (!response.ok) throw new ReleaseError(`${target} answered ${response.status}: ${refusal(text)}`);
      try {
        return JSON.parse(text) as T;
      } catch {
        throw new ReleaseError(`${target} did not answer JSON: is ${base} an Actuate environment?`);
      }
    },
  };
}

/** An error answer as a person reads it: `code: message` from the API's JSON, else the text itself. */
function refusal(text: string): string {
  try {
    const { error, message } = JSON.parse(text) as { error?: unknown; message?: unknown };
    if (typeof error === "string" && typeof message === "string") return `${error}: ${message}`;
  } catch {}
  return text;
}
