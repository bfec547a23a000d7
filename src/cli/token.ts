import { createUserToken, revokeUserToken, TokenError } from "../auth/tokens.ts";
import type { Config } from "../config.ts";
import { openStore } from "../store/open.ts";

const USER_ID = /^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$/;

export async function tokenCommand(config: Config, args: string[], flags: { user?: string }): Promise<number> {
  const [sub, target] = args;
  if (sub === "create") {
    if (!flags.user || !USER_ID.test(flags.user)) {
      throw new TokenError("usage: bun run token create --user <id> (letters, digits and . _ @ : -)");
    }
    const store = await openStore(config.databaseUrl);
    try {
      const created = await createUserToken(store, flags.user);
      console.error(`token ${created.prefix}… for user ${flags.user}; it is shown once, only its hash is stored`);
      console.log(created.token);
    } finally {
      await store.close();
    }
    return 0;
  }
  if (sub === "revoke") {
    if (!target) throw new TokenError("usage: bun run token revoke <token-prefix>");
    const store = await openStore(config.databaseUrl);
    try {
      const revoked = await revokeUserToken(store, target);
      console.log(`revoked ${revoked.prefix}… (user ${revoked.userId})`);
    } finally {
      await store.close();
    }
    return 0;
  }
  throw new TokenError("usage: bun run token create --user <id> | revoke <token-prefix>");
}
