import { errorOfBody } from "../client/errors.ts";
import { storedCredential } from "./session.ts";

/**
 * A GET of the environment serving the console, as whoever signed in, for reads `actuate/client` does not
 * offer (they serve the console only). A refusal is thrown as the client would throw it.
 */
export async function readJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const headers = new Headers();
  const token = storedCredential()?.token;
  if (token) headers.set("authorization", `Bearer ${token}`);
  const answer = await fetch(path, { headers, signal: signal ?? null });
  const body = await answer.json().catch(() => null);
  if (!answer.ok) throw errorOfBody(body, answer.status);
  return body as T;
}
