import { Elysia } from "elysia";
import { PublicError } from "../lib/errors.ts";
import { jsonStream } from "../lib/json-stream.ts";
import { isObject } from "../lib/values.ts";
import { authenticated } from "./auth.ts";
import { MiB, readJsonBody } from "./body.ts";
import type { HttpDeps } from "./deps.ts";
import { requestTarget } from "./request-target.ts";

export const QUERY_BODY_LIMIT = 4 * MiB;

/** POST /query: `{ query }` as the caller; the triple format by default, nested objects with `?format=objects`. */
export const queryRoutes = (deps: HttpDeps) =>
  new Elysia({ name: "query" })
    .use(authenticated(deps.auth, deps.publicUrl))
    .post("/query", async ({ request, principal }) => {
      const format = new URLSearchParams(requestTarget(request).search).get("format");
      if (format !== null && format !== "objects" && format !== "triples") {
        throw new PublicError("invalid_request", "format must be objects (or absent, for triples)");
      }
      const body = await readJsonBody(request, QUERY_BODY_LIMIT);
      if (!isObject(body) || !("query" in body)) {
        throw new PublicError("invalid_request", "the body must be { query: { … } }");
      }
      const answer = await deps.engine.query(principal, body.query, format === "objects" ? "objects" : "triples");
      // Up to QUERY_MAX_BYTES of entities: written as the client reads it, never as one string.
      return new Response(jsonStream(answer), { headers: { "content-type": "application/json" } });
    });
