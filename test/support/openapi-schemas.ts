import { expect } from "bun:test";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { TestServer } from "./server.ts";

const DOCUMENT_ID = "https://actuate.invalid/openapi.json";

/**
 * Checks real answers against `components.schemas` of the server's own `/openapi.json` (JSON Schema
 * 2020-12, as OpenAPI 3.1 writes it): the document is the contract, so an answer it does not describe
 * fails the test that got it.
 */
export async function answerSchemas(t: TestServer) {
  const res = await t.fetch("/openapi.json");
  expect(res.status).toBe(200);
  const { components } = (await res.json()) as { components: { schemas: Record<string, unknown> } };
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: DOCUMENT_ID, components });
  const validators = new Map<string, ReturnType<typeof ajv.compile>>();
  /** Expects `body` to be what the schema `name` describes (its errors, in full, when not). */
  return (body: unknown, name: string) => {
    expect(Object.keys(components.schemas)).toContain(name);
    let validate = validators.get(name);
    if (!validate) {
      validate = ajv.compile({ $ref: `${DOCUMENT_ID}#/components/schemas/${name}` });
      validators.set(name, validate);
    }
    validate(body);
    expect({ schema: name, errors: validate.errors ?? [] }).toEqual({ schema: name, errors: [] });
  };
}
