// The apex's `/openapi.json` (hosting mode): the service's control API (http/control.ts).

import { ENVIRONMENT_TABLES } from "../engine/control/operations.ts";
import { PAGE_LIMIT } from "../wire/paging.ts";
import {
  CreateEnvironmentBody,
  CreateOrganizationBody,
  ForkBody,
  GrantBody,
  PatchEnvironmentBody,
  PromoteBody,
} from "./control.ts";
import { error, json } from "./openapi-paths.ts";
import { COMPONENTS, pageOf, ref, type Schema } from "./openapi-schemas.ts";
import { variablePaths } from "./openapi-variables.ts";

const text = { type: "string" };
const instant = { type: "string", format: "date-time" };
const orNull = (schema: Schema) => ({ oneOf: [schema, { type: "null" }] });
const object = (properties: Record<string, unknown>, required = Object.keys(properties)) => ({
  type: "object",
  required,
  properties,
});

const organization = object({ handle: text, createdAt: instant });
const environment = object({
  handle: text,
  organization: orNull(text),
  url: { type: "string", description: "`<scheme>://<handle>.<apex>[:port]`: the environment's API and console" },
  activeVersion: orNull(text),
  createdAt: instant,
  forkedFrom: {
    ...orNull(text),
    description: "the handle of the environment it was forked from (kept when that one is gone)",
  },
  expiresAt: { ...orNull(instant), description: "when the service deletes it (a fork's ttl); null: never" },
  schedulesPaused: { type: "boolean", description: "its release's schedules do not tick (a fork's start paused)" },
});
const forkCopied = object({
  releases: { type: "integer" },
  variables: { type: "integer" },
  entities: { type: "integer" },
  links: { type: "integer" },
  files: {
    type: "integer",
    description: "file rows; their bytes stay shared with the source until one side changes them",
  },
});
const key = object({
  id: text,
  prefix: { type: "string", description: "the key's first characters, to recognise it" },
  organization: orNull(text),
  environment: orNull(text),
  createdAt: instant,
  lastUsedAt: orNull(instant),
  revokedAt: orNull(instant),
});
const newKey = {
  allOf: [ref("Key"), object({ key: { type: "string", description: "the key itself: shown once, stored hashed" } })],
};
const grant = object({
  user: text,
  organization: text,
  environment: { ...orNull(text), description: "null: every environment of the organization" },
  createdAt: instant,
});
const contents = object(Object.fromEntries(ENVIRONMENT_TABLES.map((table) => [table, { type: "integer" }])));

const ERRORS = {
  "400": error("invalid_request: a malformed body or query (issues name where)"),
  "401": error(
    "unauthorized: no operator, organization or environment key, nor a person's token for the apex (user tokens are an environment's)",
  ),
  "503": error("database_unavailable: try again after Retry-After"),
};
const notFound = (what: string) => ({ "404": error(`${what}: unknown, or not the caller's to see`) });
const forbidden = { "403": error("access_denied: the caller sees it but may not do this") };

const page = [
  { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: PAGE_LIMIT.max } },
  { name: "cursor", in: "query", schema: { type: "string" }, description: "nextCursor of the previous page" },
];
const handle = { name: "handle", in: "path", required: true, schema: text };
const ok = (description: string, schema: Schema) => ({ description, content: json(schema) });

const list = (operationId: string, description: string, schema: Schema, extra: Record<string, unknown> = {}) => ({
  operationId,
  parameters: page,
  ...extra,
  responses: { "200": ok(description, pageOf(schema)), ...ERRORS },
});

/** Keys and grants of an organization (`what` "Org") or an environment ("Environment"). */
function scopedPaths(prefix: string, what: "Org" | "Environment", missing: string) {
  const denied = what === "Environment" ? forbidden : {};
  return {
    [`${prefix}/{handle}/keys`]: {
      get: {
        ...list(`list${what}Keys`, "its keys, revoked ones included, without their secrets", ref("Key")),
        parameters: [handle, ...page],
        responses: { "200": ok("a page of keys", pageOf(ref("Key"))), ...ERRORS, ...denied, ...notFound(missing) },
      },
      post: {
        operationId: `create${what}Key`,
        parameters: [handle],
        responses: {
          "201": ok("the new key, its secret shown this once", newKey),
          ...ERRORS,
          ...denied,
          ...notFound(missing),
        },
      },
    },
    [`${prefix}/{handle}/keys/{id}`]: {
      delete: {
        operationId: `revoke${what}Key`,
        parameters: [handle, { name: "id", in: "path", required: true, schema: text }],
        responses: {
          "200": ok("revoked (a key revoked before keeps its first revocation)", ref("Key")),
          ...ERRORS,
          ...denied,
          ...notFound(`${missing} or key_not_found`),
        },
      },
    },
    [`${prefix}/{handle}/grants`]: {
      get: {
        operationId: `list${what}Grants`,
        parameters: [handle, ...page],
        responses: {
          "200": ok(
            what === "Org" ? "the grants of every environment of it" : "the grants of this environment alone",
            pageOf(ref("Grant")),
          ),
          ...ERRORS,
          ...denied,
          ...notFound(missing),
        },
      },
      post: {
        operationId: `grant${what}`,
        parameters: [handle],
        requestBody: { required: true, content: json(GrantBody as unknown as Schema) },
        responses: {
          "200": ok("the person had that grant already", ref("Grant")),
          "201": ok("granted", ref("Grant")),
          ...ERRORS,
          ...denied,
          ...notFound(missing),
        },
      },
    },
    [`${prefix}/{handle}/grants/{user}`]: {
      delete: {
        operationId: `revoke${what}Grant`,
        parameters: [handle, { name: "user", in: "path", required: true, schema: text }],
        responses: {
          "200": ok(
            "taken away; the person's user tokens where no other grant covers them are revoked",
            object({ user: text, organization: text, environment: orNull(text), revokedTokens: { type: "integer" } }),
          ),
          ...ERRORS,
          ...denied,
          ...notFound(`${missing} or grant_not_found`),
        },
      },
    },
  };
}

/** Previews (docs/decisions/previews.md): paused schedules, promote, forks. */
function previewPaths() {
  const actsOn =
    "the operator, the environment's organization key, or its own environment key (another environment's: 403)";
  return {
    "/environments/{handle}/fork": {
      post: {
        operationId: "forkEnvironment",
        description: `A new environment with the source's active release and history, its variables (secrets with secrets: true), with data: true its entities, links and files (bytes shared until one side changes them); schedules paused; ttl (30m, 12h, 7d; at most 90d) deletes it then. Served at once, with keys of its own. Who may: ${actsOn}; organization (another than the source's) takes a key that sees it.`,
        parameters: [handle],
        requestBody: { required: true, content: json(ForkBody as unknown as Schema) },
        responses: {
          "201": ok("forked: the new environment and what was copied", {
            allOf: [ref("Environment"), object({ copied: forkCopied })],
          }),
          ...ERRORS,
          "400": error("invalid_request (a ttl that is not 30m, 12h, 7d or is over 90d) or invalid_handle"),
          "403": error("access_denied: another environment's key, or an environment key naming another organization"),
          ...notFound("environment_not_found or organization_not_found"),
          "409": {
            description:
              "handle_taken, or secrets_required: the source's active release declares secrets and secrets is not true (secrets names them)",
            content: json({ allOf: [ref("Error"), object({ secrets: { type: "array", items: text } }, [])] }),
          },
        },
      },
    },
    "/environments/{handle}/promote": {
      post: {
        operationId: "promoteRelease",
        description: `Publishes the active release of from to this environment through the publish path (the same contract diff and refusals), then activates it; the same version with the same content is only activated. Who may: a caller that acts on both environments (${actsOn}).`,
        parameters: [handle],
        requestBody: { required: true, content: json(PromoteBody as unknown as Schema) },
        responses: {
          "200": ok("published (or found stored) and activated: what release publish answers", {
            allOf: [ref("PublishAnswer"), object({ from: text, to: text })],
          }),
          ...ERRORS,
          "400": error("invalid_request: the release does not load here (issues name why)"),
          ...forbidden,
          ...notFound("environment_not_found, or release_not_found: from has no active release"),
          "409": error(
            "release_conflict: this environment holds that version with other content, or the schema change would orphan its data (force accepts it), or its required variables are unset",
          ),
        },
      },
    },
  };
}

const PATHS = {
  "/orgs": {
    get: list("listOrganizations", "the organizations the caller may see, by handle", ref("Organization")),
    post: {
      operationId: "createOrganization",
      requestBody: { required: true, content: json(CreateOrganizationBody as unknown as Schema) },
      responses: {
        "201": ok("created", ref("Organization")),
        ...ERRORS,
        "400": error("invalid_request or invalid_handle: the handle is not a DNS label"),
        "403": error("access_denied: only an operator key (SERVICE_KEYS) creates organizations"),
        "409": error("handle_taken"),
      },
    },
  },
  "/orgs/{handle}": {
    get: {
      operationId: "getOrganization",
      parameters: [handle],
      responses: {
        "200": ok("the organization", ref("Organization")),
        ...ERRORS,
        ...notFound("organization_not_found"),
      },
    },
  },
  "/environments": {
    get: list("listEnvironments", "the environments the caller may open, by handle", ref("Environment"), {
      parameters: [...page, { name: "organization", in: "query", schema: text, description: "one organization's" }],
    }),
    post: {
      operationId: "createEnvironment",
      requestBody: { required: true, content: json(CreateEnvironmentBody as unknown as Schema) },
      responses: {
        "201": ok("created, with no active release", ref("Environment")),
        ...ERRORS,
        "400": error("invalid_request or invalid_handle: the handle is not a DNS label"),
        ...forbidden,
        ...notFound("organization_not_found"),
        "409": error("handle_taken: environments' handles are unique across the service"),
      },
    },
  },
  "/environments/{handle}": {
    get: {
      operationId: "getEnvironment",
      parameters: [handle],
      responses: { "200": ok("the environment", ref("Environment")), ...ERRORS, ...notFound("environment_not_found") },
    },
    patch: {
      operationId: "patchEnvironment",
      description:
        "schedulesPaused: true stops its release's schedules from ticking; false resumes them, the next tick due at once (missed ticks follow each schedule's catchUp, as after downtime). Who may: the operator, its organization key or its own environment key.",
      parameters: [handle],
      requestBody: { required: true, content: json(PatchEnvironmentBody as unknown as Schema) },
      responses: {
        "200": ok("the environment as changed", ref("Environment")),
        ...ERRORS,
        "403": error("access_denied: another environment's key"),
        ...notFound("environment_not_found"),
      },
    },
    delete: {
      operationId: "deleteEnvironment",
      parameters: [
        handle,
        {
          name: "confirm",
          in: "query",
          schema: { type: "boolean" },
          description: "true deletes; without it the answer is 409 confirmation_required with wouldRemove",
        },
      ],
      responses: {
        "200": ok(
          "deleted: its work on this instance ended, its rows and file bytes removed",
          object({ handle: text, deleted: { const: true }, removed: ref("EnvironmentContents") }),
        ),
        ...ERRORS,
        ...forbidden,
        ...notFound("environment_not_found"),
        "409": {
          description: "confirmation_required: nothing was deleted; wouldRemove counts what would go",
          content: json({ allOf: [ref("Error"), object({ wouldRemove: ref("EnvironmentContents") })] }),
        },
      },
    },
  },
  ...previewPaths(),
  "/instances": {
    get: {
      operationId: "listInstances",
      responses: {
        "200": ok(
          "the service's server processes whose heartbeat is current, oldest first",
          object({ items: { type: "array", items: ref("Instance") } }),
        ),
        ...ERRORS,
        "403": error("access_denied: an operator key (SERVICE_KEYS) only"),
      },
    },
  },
  ...scopedPaths("/orgs", "Org", "organization_not_found"),
  ...scopedPaths("/environments", "Environment", "environment_not_found"),
  ...variablePaths({
    prefix: "/environments/{handle}",
    parameters: [handle],
    errors: {
      ...ERRORS,
      "403": error("access_denied: a person; variables take the environment's, its organization's or an operator key"),
      ...notFound("environment_not_found"),
    },
    operation: (verb) => `${verb}OfEnvironment`,
  }),
};

/** The OpenAPI 3.1 document of the control API at `serviceUrl` (the same for every caller). */
export function apexOpenApiDocument(serviceUrl: string) {
  return {
    openapi: "3.1.0",
    info: { title: "Actuate service: control API", version: "1" },
    servers: [{ url: serviceUrl }],
    security: [{ bearer: [] }],
    paths: PATHS,
    components: {
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description:
            "an operator key (SERVICE_KEYS), an organization key (act_o_…), an environment key (act_e_…), or a person's access token for the apex (resource SERVICE_URL): GET /environments only",
        },
      },
      schemas: {
        Error: COMPONENTS.schemas.Error,
        Organization: organization,
        Environment: environment,
        Key: key,
        Grant: grant,
        EnvironmentContents: contents,
        Instance: COMPONENTS.schemas.Instance,
        Variable: COMPONENTS.schemas.Variable,
        PublishAnswer: COMPONENTS.schemas.PublishAnswer,
      },
    },
  };
}
