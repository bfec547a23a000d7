import { type Authenticator, bearerToken } from "../../auth/authenticator.ts";
import { isScopedKey } from "../../auth/scoped-keys.ts";
import { hashSecret } from "../../auth/tokens.ts";
import type { ControlStore } from "../../store/control.ts";

/**
 * Who calls the control API (docs/decisions/control-api.md): an operator (a SERVICE_KEYS key) may do
 * everything, an organization key everything within its organization, an environment key read itself.
 */
export type ControlCaller =
  | { kind: "operator" }
  | { kind: "organization"; organization: number }
  | { kind: "environment"; environment: number };

/**
 * The caller an `Authorization` header names at the apex, or why there is none (RFC 6750 §3.1). A stored
 * key is looked up on every request (its revocation counts at once; the apex is no hot path). User
 * tokens and JWTs are each one environment's: refused here (`invalid_token`).
 */
export async function controlCallerOf(
  deps: { auth: Authenticator; control: ControlStore },
  authorization: string | null,
): Promise<{ caller: ControlCaller } | { refused: "missing" | "invalid_token" }> {
  const token = bearerToken(authorization);
  if (!token) return { refused: "missing" };
  if (isScopedKey(token)) {
    const key = await deps.control.keys.verify(hashSecret(token), Date.now());
    if (key?.organization != null) return { caller: { kind: "organization", organization: key.organization } };
    if (key?.environment != null) return { caller: { kind: "environment", environment: key.environment } };
    return { refused: "invalid_token" };
  }
  // The apex's authenticator knows the service keys; anything else it names is a user of environment 1.
  const principal = await deps.auth.resolveToken(token);
  return principal?.kind === "service" ? { caller: { kind: "operator" } } : { refused: "invalid_token" };
}
