import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import type { Authenticator } from "../auth/authenticator.ts";
import { USER_ID } from "../auth/users.ts";
import { type ControlDeps, ControlOperations } from "../engine/control/operations.ts";
import { unauthorized } from "./auth.ts";
import { checkedBody, readJsonBody } from "./body.ts";
import { DEFAULT_PAGE, pageParams } from "./paging.ts";
import { queryString } from "./query-string.ts";
import { readVariableBody, variableName } from "./variables.ts";

/** A control API body is a handle or a user id: a few bytes. */
const BODY_LIMIT = 16 * 1024;

// Handles are checked by the store (400 `invalid_handle`): here only their type and length.
const Handle = Type.String({ minLength: 1, maxLength: 200 });
export const CreateOrganizationBody = Type.Object({ handle: Handle }, { additionalProperties: false });
export const CreateEnvironmentBody = Type.Object(
  { handle: Handle, organization: Handle },
  { additionalProperties: false },
);
export const GrantBody = Type.Object(
  { user: Type.String({ pattern: USER_ID.source }) },
  { additionalProperties: false },
);

// Previews (docs/decisions/previews.md): a fork, its schedules, promote.
export const PatchEnvironmentBody = Type.Object(
  { schedulesPaused: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
export const PromoteBody = Type.Object(
  { from: Handle, force: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
export const ForkBody = Type.Object(
  {
    handle: Handle,
    organization: Type.Optional(Handle),
    data: Type.Optional(Type.Boolean()),
    secrets: Type.Optional(Type.Boolean()),
    ttl: Type.Optional(Type.String({ minLength: 2, maxLength: 16 })),
  },
  { additionalProperties: false },
);

const ListQuery = queryString(Type.Object(pageParams, { additionalProperties: false }));
const EnvironmentsQuery = queryString(
  Type.Object({ ...pageParams, organization: Type.Optional(Handle) }, { additionalProperties: false }),
);
const DeleteQuery = queryString(
  Type.Object({ confirm: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
);

let documentModule: Promise<typeof import("./openapi-apex.ts")> | null = null;
const apexDocument = () => {
  documentModule ??= import("./openapi-apex.ts");
  return documentModule;
};

const pageOf = (q: { limit?: number; cursor?: string }) => ({ limit: q.limit ?? DEFAULT_PAGE, cursor: q.cursor });
const listed = (page: { items: unknown[]; next: string | null }) => ({ items: page.items, nextCursor: page.next });

/**
 * The service's control API on the apex (hosting mode): organizations, environments, their keys and
 * grants, as `actuate org|env|key` do them (docs/API.md, "The service's control API"), and its
 * `/openapi.json` (loaded with its first request: idle memory is a budget).
 */
export function controlRoutes(deps: ControlDeps & { auth: Authenticator; serviceUrl: () => string }) {
  const ops = new ControlOperations(deps);
  const body = async <T extends Parameters<typeof checkedBody>[0]>(schema: T, request: Request) =>
    checkedBody(schema, await readJsonBody(request, BODY_LIMIT));
  const scopes = {
    org: (params: { handle: string }) => ({ organization: params.handle }),
    env: (params: { handle: string }) => ({ environment: params.handle }),
  };
  const app = new Elysia({ name: "control" })
    // 401 before any 400, as the environment API's `authenticated`.
    .derive({ as: "scoped" }, async ({ request }) => {
      const found = await ops.callerOf(deps.auth, request.headers.get("authorization"));
      if ("refused" in found) throw unauthorized(deps.serviceUrl(), found.refused);
      return { caller: found.caller };
    })
    .get("/openapi.json", async () => (await apexDocument()).apexOpenApiDocument(deps.serviceUrl()))
    .get("/orgs", async ({ query, caller }) => listed(await ops.listOrganizations(caller, pageOf(query))), {
      query: ListQuery,
    })
    .post("/orgs", async ({ request, caller, set }) => {
      const { handle } = await body(CreateOrganizationBody, request);
      set.status = 201;
      return ops.createOrganization(caller, handle);
    })
    .get("/orgs/:handle", ({ params, caller }) => ops.organization(caller, params.handle))
    .get(
      "/environments",
      async ({ query, caller }) => listed(await ops.listEnvironments(caller, pageOf(query), query.organization)),
      { query: EnvironmentsQuery },
    )
    .post("/environments", async ({ request, caller, set }) => {
      const { handle, organization } = await body(CreateEnvironmentBody, request);
      set.status = 201;
      return ops.createEnvironment(caller, handle, organization);
    })
    .get("/environments/:handle", ({ params, caller }) => ops.environment(caller, params.handle))
    .get("/instances", async ({ caller }) => ({ items: await ops.instances(caller) }))
    .delete(
      "/environments/:handle",
      ({ params, query, caller }) => ops.deleteEnvironment(caller, params.handle, query.confirm === true),
      { query: DeleteQuery },
    );
  // Previews: their own block.
  app
    .patch("/environments/:handle", async ({ params, request, caller }) =>
      ops.patchEnvironment(caller, params.handle, await body(PatchEnvironmentBody, request)),
    )
    .post("/environments/:handle/promote", async ({ params, request, caller }) => {
      const { from, force } = await body(PromoteBody, request);
      return ops.promote(caller, params.handle, from, force === true);
    })
    .post("/environments/:handle/fork", async ({ params, request, caller, set }) => {
      const fork = await ops.fork(caller, params.handle, await body(ForkBody, request));
      set.status = 201;
      return fork;
    });
  for (const [prefix, scopeOf] of [
    ["/orgs", scopes.org],
    ["/environments", scopes.env],
  ] as const) {
    app
      .get(
        `${prefix}/:handle/keys`,
        async ({ params, query, caller }) => listed(await ops.listKeys(caller, scopeOf(params), pageOf(query))),
        { query: ListQuery },
      )
      .post(`${prefix}/:handle/keys`, async ({ params, caller, set }) => {
        set.status = 201;
        return ops.createKey(caller, scopeOf(params));
      })
      .delete(`${prefix}/:handle/keys/:id`, ({ params, caller }) => ops.revokeKey(caller, scopeOf(params), params.id))
      .get(
        `${prefix}/:handle/grants`,
        async ({ params, query, caller }) => listed(await ops.listGrants(caller, scopeOf(params), pageOf(query))),
        { query: ListQuery },
      )
      .post(`${prefix}/:handle/grants`, async ({ params, request, caller, set }) => {
        const { user } = await body(GrantBody, request);
        const { grant, created } = await ops.grant(caller, scopeOf(params), user);
        set.status = created ? 201 : 200;
        return grant;
      })
      .delete(`${prefix}/:handle/grants/:user`, ({ params, caller }) =>
        ops.revokeGrant(caller, scopeOf(params), decodeURIComponent(params.user)),
      );
  }
  // Variables (issue #44): `/environments/{handle}/variables[/{name}]`, the environment's as seen from the apex.
  const variables = "/environments/:handle/variables";
  app
    .get(variables, async ({ params, caller }) => ({ items: await ops.listVariables(caller, params.handle) }))
    .get(`${variables}/:name`, ({ params, caller }) => ops.variable(caller, params.handle, variableName(params.name)))
    .put(`${variables}/:name`, async ({ params, request, caller, set }) => {
      const name = variableName(params.name);
      const { variable, created } = await ops.setVariable(caller, params.handle, name, await readVariableBody(request));
      set.status = created ? 201 : 200;
      return variable;
    })
    .delete(`${variables}/:name`, async ({ params, caller }) => {
      await ops.unsetVariable(caller, params.handle, variableName(params.name));
      return { ok: true };
    });
  return app;
}
