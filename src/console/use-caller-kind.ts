import { type ActuateClient, ActuateError } from "../client/index.ts";
import { usePoll } from "./use-poll.ts";

/** What the console must know of who signed in: a service key may use the pages a user is refused. */
export type CallerKind = "service" | "user";

/**
 * Asked once per sign-in with `GET /releases?limit=1` (one row; service keys only, a user is 403): no
 * endpoint says who the caller is, and a credential's shape does not tell (a service key is any string).
 * `null` while unknown, so what is for service keys only waits for the answer.
 */
export function useCallerKind(client: ActuateClient | null): CallerKind | null {
  const probe = usePoll(
    async (): Promise<CallerKind | null> => {
      if (!client) return null;
      try {
        await client.releases.list({ limit: 1 });
        return "service";
      } catch (error) {
        if (error instanceof ActuateError && error.code === "access_denied") return "user";
        throw error;
      }
    },
    [client],
    0,
    () => false,
  );
  return probe.data;
}
