import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import type { SignIns } from "../auth/sign-ins.ts";
import { USER_ID } from "../auth/users.ts";
import { PublicError } from "../lib/errors.ts";
import { authenticated } from "./auth.ts";
import type { HttpDeps } from "./deps.ts";
import { queryString } from "./query-string.ts";

/** oidc-provider's grant ids are nanoids; anything else cannot name a sign-in, so it never reaches the store. */
const GRANT_ID = /^[\w-]{1,64}$/;

const ListQuery = queryString(
  Type.Object(
    { user: Type.Optional(Type.String({ pattern: USER_ID.source, description: "service keys: whose sign-ins" })) },
    { additionalProperties: false },
  ),
);

/**
 * `GET /sign-ins` (the caller's signed-in apps; a service key's choice of `user`, or everyone's) and
 * `DELETE /sign-ins/{id}` (ends one): the built-in authority's sign-ins, as the console's
 * "Signed-in apps" page shows them.
 */
export const signInRoutes = (deps: HttpDeps & { signIns: SignIns }) =>
  new Elysia({ name: "sign-ins" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .get("/sign-ins", async ({ query, principal }) => ({ items: await deps.signIns.listFor(principal, query.user) }), {
      query: ListQuery,
    })
    .delete("/sign-ins/:id", ({ params, principal }) => {
      if (!GRANT_ID.test(params.id)) throw new PublicError("sign_in_not_found", "no such sign-in");
      return deps.signIns.revokeFor(principal, params.id);
    });
