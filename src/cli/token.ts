import { createUserToken, revokeUserToken, TokenError } from "../auth/tokens.ts";
import { USER_ID } from "../auth/users.ts";
import type { Config } from "../config.ts";
import { iso } from "../lib/values.ts";
import { commandLine } from "./invocation.ts";
import { withStore } from "./with-store.ts";

export function tokenCreate(config: Config, user: string): Promise<number> {
  if (!USER_ID.test(user)) throw new TokenError("a user id is letters, digits and . _ @ : - (at most 128)");
  return withStore(config, async (store) => {
    const created = await createUserToken(store, user);
    console.error(`token ${created.prefix}… for user ${user}; it is shown once, only its hash is stored`);
    console.log(created.token);
    return 0;
  });
}

export const tokenList = (config: Config) =>
  withStore(config, async (store) => {
    const tokens = await store.tokens.list();
    if (tokens.length === 0) {
      console.log(`no user tokens yet; make one with ${commandLine("token create --user <id>")}`);
    } else {
      printTable([
        ["PREFIX", "USER", "CREATED", "REVOKED"],
        ...tokens.map((t) => [t.prefix, t.userId, iso(t.createdAt), t.revokedAt === null ? "-" : iso(t.revokedAt)]),
      ]);
    }
    const now = Date.now();
    const grants = await store.oauth.grants(now);
    if (grants.length > 0) {
      console.log(
        `\nsign-ins (the built-in authority; ${commandLine("user sessions <user>")} names each, for ${commandLine("user revoke-session")}):`,
      );
      const rows = [["CLIENT", "USER", "SIGNED IN", "EXPIRES"]];
      for (const grant of grants) {
        const { clientId, accountId, iat } = grant.payload as { clientId: string; accountId: string; iat: number };
        const client = await store.oauth.find("Client", clientId, now);
        const name = (client?.payload as { client_name?: string } | undefined)?.client_name ?? clientId;
        rows.push([name, accountId, iso(iat * 1000), grant.expiresAt === null ? "-" : iso(grant.expiresAt)]);
      }
      printTable(rows);
    }
    return 0;
  });

export const tokenRevoke = (config: Config, given: string) =>
  withStore(config, async (store) => {
    const revoked = await revokeUserToken(store, given);
    console.log(`revoked ${revoked.prefix}… (user ${revoked.userId})`);
    return 0;
  });

/** Columns padded to their widest cell, two spaces apart. */
export function printTable(rows: string[][]): void {
  const widths = (rows[0] ?? []).map((_, i) => Math.max(...rows.map((row) => row[i]?.length ?? 0)));
  for (const row of rows) {
    console.log(
      row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    );
  }
}
