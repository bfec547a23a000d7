import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { PublicError } from "../lib/errors.ts";
import type { Principal } from "../sdk/index.ts";
import { authenticated } from "./auth.ts";
import { checkedBody, readJsonBody } from "./body.ts";
import type { HttpDeps } from "./deps.ts";

/**
 * A value is at most 64 KiB (checked by the engine, 400 `invalid_variable`); its JSON string may take up to
 * six bytes for each (`\u0000`), and the envelope a little more. Anything larger is refused unread (413).
 */
export const VARIABLE_BODY_LIMIT = 6 * 64 * 1024 + 1024;

/** `PUT /variables/{name}`: the value, and whether it is a secret (omitted: as it is now, else plain). */
export const VariableBody = Type.Object(
  { value: Type.String(), secret: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);

export const readVariableBody = async (request: Request) =>
  checkedBody(VariableBody, await readJsonBody(request, VARIABLE_BODY_LIMIT));

/** A name as the path carries it; one that cannot be decoded names no variable. */
export function variableName(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new PublicError("invalid_variable", `${JSON.stringify(raw.slice(0, 140))} is not a variable name`);
  }
}

/** Who set a variable over HTTP, as listings show it (the credential's id, never the credential). */
export const setterOf = (principal: Principal) => `service:${principal.id}`;

/**
 * `GET /variables`, `GET|PUT|DELETE /variables/{name}`: the environment's variables and secrets (service
 * keys of this environment or its organization); a secret's value never leaves (docs/API.md).
 */
export const variableRoutes = (deps: HttpDeps) =>
  new Elysia({ name: "variables" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get("/variables", async ({ principal }) => ({ items: await deps.engine.variables.list(principal) }))
    .get("/variables/:name", ({ params, principal }) => deps.engine.variables.get(principal, variableName(params.name)))
    .put("/variables/:name", async ({ params, request, principal, set }) => {
      const name = variableName(params.name);
      const body = await readVariableBody(request);
      const { variable, created } = await deps.engine.variables.set(principal, name, body, setterOf(principal));
      set.status = created ? 201 : 200;
      return variable;
    })
    .delete("/variables/:name", async ({ params, principal }) => {
      await deps.engine.variables.unset(principal, variableName(params.name));
      return { ok: true };
    });
