import { PublicError } from "../lib/errors.ts";
import type { KeyScope, ScopedKeyListRow, VerifiedKey } from "../store/control.ts";
import type { Store } from "../store/store.ts";
import { DISPLAY_PREFIX_LENGTH, hashSecret, newSecret } from "./tokens.ts";

/** An organization's service key: administrator in every environment of that organization. */
export const ORGANIZATION_KEY_PREFIX = "act_o_";
/** An environment's key: administrator there only (the key a CI job deploys with). */
export const ENVIRONMENT_KEY_PREFIX = "act_e_";

/** A new stored key (256 random bits, stored as its SHA-256 as user tokens are): the key is shown once. */
export async function createScopedKey(
  store: Store,
  scope: KeyScope,
  now = Date.now(),
): Promise<{ key: string; row: ScopedKeyListRow }> {
  const key = newSecret(scope.organization !== undefined ? ORGANIZATION_KEY_PREFIX : ENVIRONMENT_KEY_PREFIX);
  const row = await store.control.keys.create(scope, hashSecret(key), key.slice(0, DISPLAY_PREFIX_LENGTH), now);
  return { key, row };
}

/** The scope of a live stored key sent as a bearer credential, or null (another kind of credential, unknown, revoked). */
export function verifyScopedKey(store: Store, key: string, now = Date.now()): Promise<VerifiedKey | null> {
  if (!key.startsWith(ORGANIZATION_KEY_PREFIX) && !key.startsWith(ENVIRONMENT_KEY_PREFIX)) return Promise.resolve(null);
  return store.control.keys.verify(hashSecret(key), now);
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
