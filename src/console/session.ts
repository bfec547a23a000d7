import { type ActuateClient, createClient } from "../client/index.ts";

// sessionStorage: the credential lasts as long as the tab, and never goes into a URL.
const KEY = "actuate.console.credential";
/** When a token from the built-in sign-in ends (ms); a pasted one has no known end. */
const EXPIRES = "actuate.console.expires-at";

export interface Credential {
  token: string;
  expiresAt: number | null;
}

export function storedCredential(): Credential | null {
  const token = sessionStorage.getItem(KEY);
  if (!token) return null;
  const expiresAt = Number(sessionStorage.getItem(EXPIRES)) || null;
  return { token, expiresAt };
}

export function storeCredential(credential: Credential): void {
  sessionStorage.setItem(KEY, credential.token);
  if (credential.expiresAt === null) sessionStorage.removeItem(EXPIRES);
  else sessionStorage.setItem(EXPIRES, String(credential.expiresAt));
}

export function forgetCredential(): void {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(EXPIRES);
}

/**
 * A client of the server that serves the console, as whoever signed in. `onRefused` hears of any 401:
 * the credential expired or was revoked, and no page can go on with it.
 */
export const clientFor = (token: string, onRefused?: () => void): ActuateClient => {
  const client = createClient({
    url: location.origin,
    token,
    fetch: async (input, init) => {
      const answer = await fetch(input, init);
      if (answer.status === 401) onRefused?.();
      return answer;
    },
  });
  // Live lists read nothing after their first page: a revoked token is heard on the socket (closed with 4001).
  client.onConnectionChange((state) => state === "unauthorized" && onRefused?.());
  return client;
};
