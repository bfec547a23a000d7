import { Elysia } from "elysia";
import { errorResponse } from "./errors.ts";

export interface ResourceMetadataOptions {
  publicUrl: () => string;
  handle: string;
  authIssuer?: string;
  /** The environment is its own authorization server (auth/authority/): it names itself. */
  builtInAuthority?: boolean;
  /** Hosting mode: the service's authority (SERVICE_URL), at the apex, names the environment's authorization server. */
  serviceAuthority?: string;
}

/** RFC 9728 protected-resource metadata for the /mcp resource, at the path-inserted and the root URL; no credential needed. */
export const wellKnownRoutes = (options: ResourceMetadataOptions) => {
  // The one the service's or the environment's own authority grants (auth/authority/authority.ts RESOURCE_SCOPE).
  const ours = !options.authIssuer && (options.builtInAuthority || options.serviceAuthority !== undefined);
  const authorizationServer = options.authIssuer ?? options.serviceAuthority;
  const metadata = () => ({
    resource: `${options.publicUrl()}/mcp`,
    ...(authorizationServer
      ? { authorization_servers: [authorizationServer] }
      : options.builtInAuthority
        ? { authorization_servers: [options.publicUrl()] }
        : {}),
    bearer_methods_supported: ["header"],
    scopes_supported: ours ? ["mcp"] : [],
    resource_name: `Actuate environment ${options.handle}`,
  });
  const routes = new Elysia({ name: "well-known" })
    .get("/.well-known/oauth-protected-resource/mcp", metadata)
    .get("/.well-known/oauth-protected-resource", metadata);
  const service = options.serviceAuthority;
  if (service === undefined) return routes;
  // Hosting mode: the authority is the apex's, not the environment's. A 404 that says where it is, rather than
  // a redirect: RFC 8414 metadata must come from its issuer's URL, and clients find it from the metadata above.
  const elsewhere = () =>
    errorResponse(
      "not_found",
      `the authorization server of this environment is the service's: ${service}/.well-known/oauth-authorization-server`,
    );
  return routes
    .all("/.well-known/oauth-authorization-server", elsewhere)
    .all("/.well-known/openid-configuration", elsewhere)
    .all("/oauth/*", elsewhere);
};
