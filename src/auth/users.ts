import { randomBase64url } from "../lib/ids.ts";
import type { Store } from "../store/store.ts";

/** A user id: what a token acts as and the execution records name. */
export const USER_ID = /^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$/;
export const MIN_PASSWORD_LENGTH = 12;

export class UserError extends Error {
  override name = "UserError";
}

/** A password good enough to hand out once: 128 random bits, typeable. */
export const newPassword = () => randomBase64url(16);

/** Adds a person who signs in with `password` (stored as argon2id). */
export async function addUser(store: Store, id: string, password: string, now = Date.now()): Promise<void> {
  if (!USER_ID.test(id)) throw new UserError("a user id is letters, digits and . _ @ : - (at most 128)");
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new UserError(`a password has at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  const passwordHash = await Bun.password.hash(password, { algorithm: "argon2id" });
  if (!(await store.users.insert({ id, passwordHash, createdAt: now, disabledAt: null }))) {
    throw new UserError(`user ${id} exists already`);
  }
}

/**
 * Disables a user and revokes every token it holds and every sign-in the built-in authority gave it,
 * so it acts nowhere from now on; answers how many of each ended.
 */
export async function disableUser(
  store: Store,
  id: string,
  now = Date.now(),
): Promise<{ tokens: number; signIns: number }> {
  if (!(await store.users.disable(id, now))) throw new UserError(`no user ${id}`);
  const signIns = await store.oauth.revokeAccount(id);
  return { tokens: await store.tokens.revokeAllOf(id, now), signIns };
}

/**
 * Lets a disabled user sign in again. What disabling ended stays ended (its tokens are revoked, its
 * sign-ins deleted): the person signs in anew. Answers whether the user was disabled.
 */
export async function enableUser(store: Store, id: string): Promise<boolean> {
  if (await store.users.enable(id)) return true;
  if (!(await store.users.get(id))) throw new UserError(`no user ${id}`);
  return false;
}

/** A hash of no password, checked when the user is unknown so that the answer takes as long either way. */
let decoy: Promise<string> | null = null;

/**
 * Whether `password` is this user's: `accepted`; `refused` for an unknown user and a wrong password
 * alike, in the same time (an unknown user is checked against a decoy hash); `disabled` only once the
 * password is verified, so a disabled account is named to its owner alone.
 */
export async function checkPassword(
  store: Store,
  id: string,
  password: string,
): Promise<"accepted" | "refused" | "disabled"> {
  const user = USER_ID.test(id) ? await store.users.get(id) : null;
  decoy ??= Bun.password.hash(newPassword(), { algorithm: "argon2id" });
  const matches = await Bun.password.verify(password, user?.passwordHash ?? (await decoy));
  if (!matches || user === null) return "refused";
  return user.disabledAt === null ? "accepted" : "disabled";
}
