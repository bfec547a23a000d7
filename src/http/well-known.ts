import { Elysia } from "elysia";

export interface ResourceMetadataOptions {
  publicUrl: () => string;
  handle: string;
  authIssuer?: string;
}

/** RFC 9728 protected-resource metadata for the /mcp resource, at the path-inserted and the root URL; no credential needed. */
export const wellKnownRoutes = (options: ResourceMetadataOptions) => {
  const metadata = () => ({
    resource: `${options.publicUrl()}/mcp`,
    ...(options.authIssuer ? { authorization_servers: [options.authIssuer] } : {}),
    bearer_methods_supported: ["header"],
    scopes_supported: [],
    resource_name: `Actuate environment ${options.handle}`,
  });
  return new Elysia({ name: "well-known" })
    .get("/.well-known/oauth-protected-resource/mcp", metadata)
    .get("/.well-known/oauth-protected-resource", metadata);
};
