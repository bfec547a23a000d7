import { Elysia } from "elysia";
import type { Authenticator } from "../auth/authenticator.ts";
import { HttpError } from "./errors.ts";

export const resourceMetadataUrl = (publicUrl: string) => `${publicUrl}/.well-known/oauth-protected-resource/mcp`;

/** 401, pointing at the resource metadata; `invalid_token` when a bearer token was sent and refused (RFC 6750 §3.1). */
export const unauthorized = (publicUrl: string, refused: "missing" | "invalid_token" = "missing") =>
  new HttpError("unauthorized", "a valid bearer credential is required (Authorization: Bearer <token>)", {
    "www-authenticate": `Bearer resource_metadata="${resourceMetadataUrl(publicUrl)}"${refused === "invalid_token" ? ', error="invalid_token"' : ""}`,
  });

/**
 * Resolves `principal` for every route of the plugin that uses this one. Deliberately unnamed: Elysia
 * de-duplicates named plugins, and every route plugin needs its own copy of this hook. A `derive`, not a
 * `resolve`: it runs before the route's schema is checked, so a caller without a credential learns
 * nothing of the endpoint (401 before any 400).
 */
export const authenticated = (auth: Authenticator, publicUrl: () => string) =>
  new Elysia().derive({ as: "scoped" }, async ({ request }) => {
    const authentication = await auth.authenticate(request.headers.get("authorization"));
    if ("refused" in authentication) throw unauthorized(publicUrl(), authentication.refused);
    return { principal: authentication.principal };
  });
