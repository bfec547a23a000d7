import { SIGN_IN_PREFIX_LENGTH, SignIns } from "../auth/sign-ins.ts";
import { USER_ID, UserError } from "../auth/users.ts";
import type { Config } from "../config.ts";
import { printTable } from "./token.ts";
import { withStore } from "./with-store.ts";

/** A person's signed-in apps (the built-in authority's sign-ins), each named by the first characters of its id. */
export function userSessions(config: Config, user: string): Promise<number> {
  if (!USER_ID.test(user)) throw new UserError("a user id is letters, digits and . _ @ : - (at most 128)");
  return withStore(config, async (store) => {
    const signIns = await new SignIns({ store }).list(user);
    if (signIns.length === 0) {
      console.log(`${user} is signed in to no app`);
      return 0;
    }
    printTable([
      ["SIGN-IN", "APP", "SIGNED IN", "LAST REFRESH", "EXPIRES"],
      ...signIns.map((s) => [
        s.id.slice(0, SIGN_IN_PREFIX_LENGTH),
        s.client.name,
        s.signedInAt,
        s.lastRefreshAt ?? "-",
        s.expiresAt ?? "-",
      ]),
    ]);
    return 0;
  });
}

export const userRevokeSession = (config: Config, id: string) =>
  withStore(config, async (store) => {
    const ended = await new SignIns({ store }).revokeByPrefix(id);
    console.log(
      `revoked sign-in ${ended.id.slice(0, SIGN_IN_PREFIX_LENGTH)} (${ended.client.name}, user ${ended.user}): ` +
        "its refresh tokens now, its access tokens within TOKEN_RECHECK_MS",
    );
    return 0;
  });
