import { type Authenticator, bearerToken } from "../../auth/authenticator.ts";
import { looksLikeJwt } from "../../auth/jwt.ts";
import { isScopedKey } from "../../auth/scoped-keys.ts";
import { hashSecret } from "../../auth/tokens.ts";
import type { ControlStore } from "../../store/control.ts";

/**
 * Who calls the control API (docs/decisions/control-api.md): an operator (a SERVICE_KEYS key) may do
 * everything, an organization key everything within its organization, an environment key read itself, a
 * person (signed in at the apex through the service's authority) list the environments granted to them.
 */
export type ControlCaller =
  | { kind: "operator" }
  | { kind: "organization"; organization: number; key?: string }
  | { kind: "environment"; environment: number; key?: string }
  | { kind: "person"; user: string };

/**
 * The caller an `Authorization` header names at the apex, or why there is none (RFC 6750 §3.1). A stored
 * key is looked up on every request (its revocation counts at once; the apex is no hot path). A JWT the
 * apex's authenticator takes (the service's authority's, for the apex) is a person; user tokens and other
 * JWTs are each one environment's: refused here (`invalid_token`).
 */
export async function controlCallerOf(
  deps: { auth: Authenticator; control: ControlStore },
  authorization: string | null,
): Promise<{ caller: ControlCaller } | { refused: "missing" | "invalid_token" }> {
  const token = bearerToken(authorization);
  if (!token) return { refused: "missing" };
  if (isScopedKey(token)) {
    const key = await deps.control.keys.verify(hashSecret(token), Date.now());
    if (key?.organization != null) {
      return { caller: { kind: "organization", organization: key.organization, key: key.id } };
    }
    if (key?.environment != null) return { caller: { kind: "environment", environment: key.environment, key: key.id } };
    return { refused: "invalid_token" };
  }
  // The apex's authenticator knows the service keys and the apex's JWTs; a user token it names is environment 1's.
  const principal = await deps.auth.resolveToken(token);
  if (principal?.kind === "service") return { caller: { kind: "operator" } };
  if (principal?.kind === "user" && looksLikeJwt(token)) return { caller: { kind: "person", user: principal.id } };
  return { refused: "invalid_token" };
}
