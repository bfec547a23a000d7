import { createScopedKey, revokeScopedKey } from "../auth/scoped-keys.ts";
import { newSecret, SERVICE_KEY_PREFIX } from "../auth/tokens.ts";
import { UserError } from "../auth/users.ts";
import type { Config } from "../config.ts";
import { iso } from "../lib/values.ts";
import type { Scope } from "../store/control.ts";
import type { Store } from "../store/store.ts";
import { commandLine } from "./invocation.ts";
import { environmentNamed, organizationNamed } from "./org.ts";
import { printTable } from "./token.ts";
import { withStore } from "./with-store.ts";

/** Prints a new service key (256 random bits) alone on stdout, and on stderr how a server is given it. */
export async function keyCreate(): Promise<number> {
  const key = newSecret(SERVICE_KEY_PREFIX);
  console.error(`a new service key: 256 random bits, stored nowhere; keep it in your secret store.
a server accepts it when it is in SERVICE_KEYS (comma-separated, so an old key can stay while clients move):
  SERVICE_KEYS=${key} ${commandLine("start")}
clients send it as a bearer token:
  curl -H "Authorization: Bearer ${key}" …`);
  console.log(key);
  return 0;
}

/** `--org` or `--env` (at most one), resolved to a scope; none: undefined. */
async function scopeOf(store: Store, flags: { org?: string; env?: string }): Promise<Scope | undefined> {
  if (flags.org !== undefined && flags.env !== undefined) throw new UserError("give --org or --env, not both");
  if (flags.org !== undefined) return { organization: (await organizationNamed(store, flags.org)).id };
  if (flags.env !== undefined) return { environment: (await environmentNamed(store, flags.env)).id };
  return undefined;
}

/** A key of an organization or an environment, stored hashed; the key alone on stdout, once. */
export const keyCreateStored = (config: Config, flags: { org?: string; env?: string }) =>
  withStore(config, async (store) => {
    const scope = (await scopeOf(store, flags)) as Scope;
    const { key, row } = await createScopedKey(store, scope);
    const what =
      flags.org !== undefined
        ? `administrator in every environment of ${flags.org}`
        : `administrator of environment ${flags.env}`;
    console.error(`a new key ${row.prefix}… (${what}); it is shown once, only its hash is stored.
clients send it as a bearer token; ${commandLine(`key revoke ${row.prefix}`)} revokes it.`);
    console.log(key);
    return 0;
  });

export const keyList = (config: Config, flags: { org?: string; env?: string }) =>
  withStore(config, async (store) => {
    const keys = await store.control.keys.list(await scopeOf(store, flags));
    if (keys.length === 0) {
      console.log(`no stored keys; make one with ${commandLine("key create --org <org>")} or --env <environment>`);
      return 0;
    }
    const orgs = new Map((await store.control.organizations.list()).map((o) => [o.id, o.handle]));
    const envs = new Map((await store.control.environments.list()).map((e) => [e.id, e.handle]));
    const scope = (organization: number | null, environment: number | null) =>
      organization !== null
        ? `org ${orgs.get(organization) ?? organization}`
        : `env ${envs.get(environment ?? 0) ?? environment}`;
    const time = (ms: number | null) => (ms === null ? "-" : iso(ms));
    printTable([
      ["ID", "PREFIX", "SCOPE", "CREATED", "LAST USED", "REVOKED"],
      ...keys.map((k) => [
        k.id,
        k.prefix,
        scope(k.organization, k.environment),
        iso(k.createdAt),
        time(k.lastUsedAt),
        time(k.revokedAt),
      ]),
    ]);
    return 0;
  });

export const keyRevoke = (config: Config, given: string) =>
  withStore(config, async (store) => {
    const key = await revokeScopedKey(store, given);
    console.log(`revoked ${key.prefix}… (${key.id})`);
    return 0;
  });
