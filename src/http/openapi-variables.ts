// The variables' paths and schemas, the same on an environment's host (`/variables`) and on the apex
// (`/environments/{handle}/variables`). Their examples show no secret's value: there is none to show.

import type { Schema } from "./openapi-schemas.ts";

const json = (schema: Schema, example?: unknown) => ({
  "application/json": example === undefined ? { schema } : { schema, example },
});
const error = (description: string) => ({ description, content: json({ $ref: "#/components/schemas/Error" }) });
const ref = { $ref: "#/components/schemas/Variable" };
const text = { type: "string" };
const orNull = (schema: Schema) => ({ oneOf: [schema, { type: "null" }] });

const PLAIN_EXAMPLE = {
  name: "REGION",
  secret: false,
  value: "eu",
  updatedAt: "2026-11-28T12:00:00.000Z",
  updatedBy: "service:key-0192f3a4",
  declared: true,
  required: false,
  set: true,
};
/** A secret as every answer shows it: no `value`. */
const SECRET_EXAMPLE = {
  name: "STRIPE_KEY",
  secret: true,
  updatedAt: "2026-11-28T12:00:00.000Z",
  updatedBy: "ops@build-host",
  declared: true,
  required: true,
  set: true,
};

export const VARIABLE_SCHEMA: Schema = {
  type: "object",
  required: ["name", "secret", "updatedAt", "updatedBy", "declared", "required", "set"],
  properties: {
    name: text,
    secret: { type: "boolean", description: "a secret's value is never in any answer" },
    value: { type: "string", description: "a plain variable's value; absent for a secret" },
    updatedAt: { ...orNull({ type: "string", format: "date-time" }), description: "null: declared, never set" },
    updatedBy: { ...orNull(text), description: "who set it: service:<key id>, or the CLI's user@host" },
    declared: { type: "boolean", description: "the active release declares it (env of defineRelease)" },
    required: { type: "boolean", description: "declared without a default: the release needs it set" },
    set: { type: "boolean", description: "a value is stored in this environment" },
  },
};

const BODY_SCHEMA: Schema = {
  type: "object",
  required: ["value"],
  additionalProperties: false,
  properties: {
    value: { type: "string", description: "at most 64 KiB; a secret's at least 8 characters" },
    secret: { type: "boolean", description: "store it encrypted, write-only (omitted: as it is now, else plain)" },
  },
};

const nameParameter = {
  name: "name",
  in: "path",
  required: true,
  schema: { type: "string", pattern: "^[A-Z_][A-Z0-9_]{0,127}$" },
};

/**
 * `/variables` and `/variables/{name}` under `prefix` ("" on an environment's host,
 * `/environments/{handle}` on the apex), with the caller's errors (`errors`: 401, 403, 404 … as each document words them).
 */
export function variablePaths(options: {
  prefix: string;
  parameters: Schema[];
  errors: Record<string, unknown>;
  operation: (verb: string) => string;
}) {
  const { prefix, parameters, errors, operation } = options;
  const notFound = { "404": error("variable_not_found: no such variable is set here") };
  const invalid = {
    "400": error(
      "invalid_variable (a name not [A-Z_][A-Z0-9_]*, a secret shorter than 8 characters) or invalid_request (a malformed body)",
    ),
  };
  return {
    [`${prefix}/variables`]: {
      get: {
        operationId: operation("listVariables"),
        parameters,
        responses: {
          "200": {
            description: "every variable set or declared, by name; secrets without their value",
            content: json(
              { type: "object", required: ["items"], properties: { items: { type: "array", items: ref } } },
              { items: [PLAIN_EXAMPLE, SECRET_EXAMPLE] },
            ),
          },
          ...errors,
        },
      },
    },
    [`${prefix}/variables/{name}`]: {
      get: {
        operationId: operation("getVariable"),
        parameters: [...parameters, nameParameter],
        responses: {
          "200": { description: "the variable (a secret without its value)", content: json(ref, PLAIN_EXAMPLE) },
          ...errors,
          ...notFound,
        },
      },
      put: {
        operationId: operation("setVariable"),
        parameters: [...parameters, nameParameter],
        requestBody: { required: true, content: json(BODY_SCHEMA) },
        responses: {
          "200": { description: "replaced (a secret without its value)", content: json(ref, SECRET_EXAMPLE) },
          "201": { description: "set for the first time", content: json(ref, PLAIN_EXAMPLE) },
          ...errors,
          ...invalid,
          "413": error("payload_too_large: the body is over 385 KiB (a 64 KiB value, escaped, and its envelope)"),
          "409": error("secrets_key_required: the server has no SECRETS_KEY to encrypt a secret with"),
        },
      },
      delete: {
        operationId: operation("unsetVariable"),
        parameters: [...parameters, nameParameter],
        responses: {
          "200": {
            description: "unset (a declared default applies again)",
            content: json({ type: "object", properties: { ok: { const: true } } }),
          },
          ...errors,
          ...notFound,
        },
      },
    },
  };
}
