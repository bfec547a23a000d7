import { sha256Hex } from "../lib/canonical-json.ts";
import { randomBase64url } from "../lib/ids.ts";
import type { Store } from "../store/store.ts";

/** Tokens are 256 random bits, so one round of SHA-256 is the right hash: nothing to brute-force. */
export const hashSecret = (secret: string) => sha256Hex(secret);

export const USER_TOKEN_PREFIX = "act_u_";
export const SERVICE_KEY_PREFIX = "act_s_";
/** How many leading characters of a token are stored in clear, to name it in lists and revocations. */
export const DISPLAY_PREFIX_LENGTH = 14;

export function newSecret(prefix: string): string {
  return `${prefix}${randomBase64url(32)}`;
}

export interface CreatedToken {
  token: string;
  id: string;
  prefix: string;
}

export async function createUserToken(store: Store, userId: string, now = Date.now()): Promise<CreatedToken> {
  const token = newSecret(USER_TOKEN_PREFIX);
  const prefix = token.slice(0, DISPLAY_PREFIX_LENGTH);
  const id = Bun.randomUUIDv7();
  await store.tokens.insert({ id, tokenHash: hashSecret(token), prefix, userId, createdAt: now, revokedAt: null });
  return { token, id, prefix };
}

export class TokenError extends Error {
  override name = "TokenError";
}

/** Revokes the token whose first characters (at least the displayed prefix) or whole value is given. */
export async function revokeUserToken(
  store: Store,
  given: string,
  now = Date.now(),
): Promise<{ prefix: string; userId: string }> {
  if (given.length < DISPLAY_PREFIX_LENGTH) {
    throw new TokenError(`give at least the first ${DISPLAY_PREFIX_LENGTH} characters of the token`);
  }
  const exact = given.length > DISPLAY_PREFIX_LENGTH ? await store.tokens.findByHash(hashSecret(given)) : null;
  const candidates = exact ? [exact] : await store.tokens.findByPrefix(given.slice(0, DISPLAY_PREFIX_LENGTH));
  const live = candidates.filter((t) => t.revokedAt === null);
  if (live.length === 0) throw new TokenError("no live token starts with that");
  if (live.length > 1) throw new TokenError("more than one token starts with that; give the whole token");
  const [token] = live as [(typeof live)[0]];
  await store.tokens.revoke(token.id, now);
  return { prefix: token.prefix, userId: token.userId };
}
