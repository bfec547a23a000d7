import { errorOfBody } from "../client/errors.ts";
import type { VariableView } from "../wire/views.ts";
import { storedCredential } from "./session.ts";

/**
 * `/variables` of the environment serving the console, as whoever signed in (service keys only). Not in
 * `actuate/client`: an app has no business with its environment's secrets.
 */
async function call<T>(path: string, init: RequestInit = {}): Promise<T> {
  const headers = new Headers(init.headers);
  const token = storedCredential()?.token;
  if (token) headers.set("authorization", `Bearer ${token}`);
  if (init.body) headers.set("content-type", "application/json");
  const answer = await fetch(path, { ...init, headers });
  const body = await answer.json().catch(() => null);
  if (!answer.ok) throw errorOfBody(body, answer.status);
  return body as T;
}

const one = (name: string) => `/variables/${encodeURIComponent(name)}`;

export const variablesApi = {
  list: async () => (await call<{ items: VariableView[] }>("/variables")).items,
  set: (name: string, value: string, secret: boolean) =>
    call<VariableView>(one(name), { method: "PUT", body: JSON.stringify({ value, secret }) }),
  unset: (name: string) => call<{ ok: true }>(one(name), { method: "DELETE" }),
};
