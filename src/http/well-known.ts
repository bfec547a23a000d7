import { Elysia } from "elysia";

export interface ResourceMetadataOptions {
  publicUrl: () => string;
  handle: string;
  authIssuer?: string;
  /** The environment is its own authorization server (auth/authority/): it names itself. */
  builtInAuthority?: boolean;
}

/** RFC 9728 protected-resource metadata for the /mcp resource, at the path-inserted and the root URL; no credential needed. */
export const wellKnownRoutes = (options: ResourceMetadataOptions) => {
  const metadata = () => ({
    resource: `${options.publicUrl()}/mcp`,
    ...(options.authIssuer
      ? { authorization_servers: [options.authIssuer] }
      : options.builtInAuthority
        ? { authorization_servers: [options.publicUrl()] }
        : {}),
    bearer_methods_supported: ["header"],
    // The built-in authority grants one scope (auth/authority/authority.ts RESOURCE_SCOPE).
    scopes_supported: !options.authIssuer && options.builtInAuthority ? ["mcp"] : [],
    resource_name: `Actuate environment ${options.handle}`,
  });
  return new Elysia({ name: "well-known" })
    .get("/.well-known/oauth-protected-resource/mcp", metadata)
    .get("/.well-known/oauth-protected-resource", metadata);
};
