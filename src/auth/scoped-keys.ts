import { PublicError } from "../lib/errors.ts";
import type { Principal } from "../sdk/index.ts";
import type { Scope, ScopedKeyListRow } from "../store/control.ts";
import type { Store } from "../store/store.ts";
import { DISPLAY_PREFIX_LENGTH, hashSecret, newSecret } from "./tokens.ts";

/** An organization's service key: administrator in every environment of that organization. */
export const ORGANIZATION_KEY_PREFIX = "act_o_";
/** An environment's key: administrator there only (the key a CI job deploys with). */
export const ENVIRONMENT_KEY_PREFIX = "act_e_";

/** A new stored key (256 random bits, stored as its SHA-256 as user tokens are): the key is shown once. */
export async function createScopedKey(
  store: Store,
  scope: Scope,
  now = Date.now(),
): Promise<{ key: string; row: ScopedKeyListRow }> {
  const key = newSecret(scope.organization !== undefined ? ORGANIZATION_KEY_PREFIX : ENVIRONMENT_KEY_PREFIX);
  const row = await store.control.keys.create(scope, hashSecret(key), key.slice(0, DISPLAY_PREFIX_LENGTH), now);
  return { key, row };
}

/** Whether a bearer credential has the shape of a stored key (else it is never looked up as one). */
export const isScopedKey = (token: string) =>
  token.startsWith(ORGANIZATION_KEY_PREFIX) || token.startsWith(ENVIRONMENT_KEY_PREFIX);

/**
 * The caller a stored key is in `store`'s environment: a service principal (administrator) when the key is
 * live and that environment's, or its organization's; null otherwise (unknown, revoked, another scope).
 */
export async function scopedKeyPrincipal(store: Store, keyHash: string, now = Date.now()): Promise<Principal | null> {
  const key = await store.control.keys.verify(keyHash, now);
  if (!key) return null;
  const covers =
    key.environment === store.environmentId ||
    (key.organization !== null &&
      key.organization === (await store.control.environments.byId(store.environmentId))?.organization);
  return covers ? { kind: "service", id: `key-${key.id}` } : null;
}

/** Revokes the live key given by its id, its displayed prefix (first 14 characters) or its whole value. */
export async function revokeScopedKey(store: Store, given: string, now = Date.now()): Promise<ScopedKeyListRow> {
  const keys = store.control.keys;
  const byId = await keys.byId(given);
  const candidates = byId
    ? [byId]
    : given.length < DISPLAY_PREFIX_LENGTH
      ? []
      : await keys.byPrefix(given.slice(0, DISPLAY_PREFIX_LENGTH));
  const live = candidates.filter((k) => k.revokedAt === null);
  if (live.length === 0) {
    throw new PublicError("not_found", `no live key has the id or starts with ${JSON.stringify(given)}`);
  }
  if (live.length > 1) throw new PublicError("invalid_request", "more than one key starts with that; give its id");
  const [key] = live as [ScopedKeyListRow];
  await keys.revoke(key.id, now);
  return { ...key, revokedAt: now };
}
