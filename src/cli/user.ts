import { addUser, disableUser, enableUser, newPassword } from "../auth/users.ts";
import type { Config } from "../config.ts";
import { iso } from "../lib/values.ts";
import { commandLine } from "./invocation.ts";
import { printTable } from "./token.ts";
import { withStore } from "./with-store.ts";

/**
 * Adds a person who signs in with a password: read from standard input with --password-stdin (a
 * script, a secret manager), otherwise generated and printed once.
 */
export async function userAdd(config: Config, id: string, options: { passwordStdin: boolean }): Promise<number> {
  const password = options.passwordStdin ? (await Bun.stdin.text()).replace(/\r?\n$/, "") : newPassword();
  return withStore(config, async (store) => {
    await addUser(store, id, password);
    if (options.passwordStdin) {
      console.log(`added user ${id}`);
    } else {
      console.error(`added user ${id}; the password is shown once, only its argon2id hash is stored`);
      console.log(password);
    }
    return 0;
  });
}

export const userList = (config: Config) =>
  withStore(config, async (store) => {
    const users = await store.users.list();
    if (users.length === 0) {
      console.log(`no users yet; add one with ${commandLine("user add <id>")}`);
      return 0;
    }
    printTable([
      ["USER", "CREATED", "DISABLED"],
      ...users.map((u) => [u.id, iso(u.createdAt), u.disabledAt === null ? "-" : iso(u.disabledAt)]),
    ]);
    return 0;
  });

export const userDisable = (config: Config, id: string) =>
  withStore(config, async (store) => {
    const ended = await disableUser(store, id);
    console.log(`disabled user ${id}; ${ended.tokens} token(s) revoked, ${ended.signIns} sign-in(s) ended`);
    return 0;
  });

export const userEnable = (config: Config, id: string) =>
  withStore(config, async (store) => {
    if (await enableUser(store, id)) {
      console.log(`enabled user ${id}; they sign in again (the tokens and sign-ins disabling ended stay ended)`);
    } else {
      console.log(`user ${id} is not disabled; nothing changed`);
    }
    return 0;
  });
