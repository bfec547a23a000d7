import { type Authenticator, bearerToken } from "../../auth/authenticator.ts";
import { isScopedKey } from "../../auth/scoped-keys.ts";
import { hashSecret } from "../../auth/tokens.ts";
import type { ControlStore } from "../../store/control.ts";
import { unauthorized } from "../auth.ts";

/**
 * Who calls the control API (docs/decisions/control-api.md): an operator (a SERVICE_KEYS key) may do
 * everything, an organization key everything within its organization, an environment key read itself.
 */
export type ControlCaller =
  | { kind: "operator" }
  | { kind: "organization"; organization: number }
  | { kind: "environment"; environment: number };

/**
 * The caller of an `Authorization` header at the apex, or a 401. A stored key is looked up on every
 * request (its revocation counts at once; the apex is no hot path). User tokens and JWTs are each one
 * environment's: refused here (401 `invalid_token`).
 */
export async function controlCallerOf(
  deps: { auth: Authenticator; control: ControlStore; serviceUrl: () => string },
  authorization: string | null,
): Promise<ControlCaller> {
  const token = bearerToken(authorization);
  if (!token) throw unauthorized(deps.serviceUrl());
  if (isScopedKey(token)) {
    const key = await deps.control.keys.verify(hashSecret(token), Date.now());
    if (key?.organization != null) return { kind: "organization", organization: key.organization };
    if (key?.environment != null) return { kind: "environment", environment: key.environment };
    throw unauthorized(deps.serviceUrl(), "invalid_token");
  }
  // The apex's authenticator knows the service keys; anything else it names is a user of environment 1.
  const principal = await deps.auth.resolveToken(token);
  if (principal?.kind === "service") return { kind: "operator" };
  throw unauthorized(deps.serviceUrl(), "invalid_token");
}
