import type { ClientMetadata, KoaContextWithOIDC } from "oidc-provider";
import { errors } from "oidc-provider";
import { isLoopbackHost } from "../../lib/loopback.ts";

/**
 * oidc-provider's loopback host names (RFC 8252 §7.3): the only ones its native clients may use over http,
 * on any port. Other loopback names (`app.localhost`, 127.0.0.2) make a web client, matched exactly.
 */
const NATIVE_LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

const isNativeLoopbackHttp = (url: URL) => url.protocol === "http:" && NATIVE_LOOPBACK_HOSTS.has(url.hostname);
/** An app's own scheme (RFC 8252 §7.1: `cursor://…`, `com.example.app:/…`); oidc-provider refuses the dangerous ones. */
const isPrivateUseScheme = (url: URL) => url.protocol !== "http:" && url.protocol !== "https:";

/**
 * What a client that does not say (no `application_type`, as MCP clients register) is taken for: a
 * native app (RFC 8252) when every redirect URI is a loopback address over http or an app's own scheme,
 * so that its scheme is accepted and its loopback port may vary; a web client otherwise (exact match).
 */
export function applicationTypeOf(redirectUris: unknown): "native" | "web" {
  if (!Array.isArray(redirectUris) || redirectUris.length === 0) return "web";
  const native = redirectUris.every((uri) => {
    const url = typeof uri === "string" ? URL.parse(uri) : null;
    return url !== null && (isNativeLoopbackHttp(url) || isPrivateUseScheme(url));
  });
  return native ? "native" : "web";
}

/** The first redirect URI that would send a code in cleartext over a network: http to a host that is not loopback. */
function cleartextRedirect(redirectUris: unknown): string | undefined {
  if (!Array.isArray(redirectUris)) return undefined;
  return redirectUris.find((uri) => {
    const url = typeof uri === "string" ? URL.parse(uri) : null;
    return url?.protocol === "http:" && !isLoopbackHost(url.hostname);
  });
}

/**
 * oidc-provider's hook on every client's metadata (`extraClientMetadata`, run before its own checks):
 * a client registering without `application_type` gets the one its redirect URIs call for, and no
 * client, web or native, may have a cleartext redirect URI off loopback. Clients already stored keep
 * the type they were registered with; metadata documents get theirs where they are read
 * (client-documents.ts), since no registration request carries them.
 */
export const redirectRules = {
  properties: ["application_type", "redirect_uris"],
  validator(ctx: KoaContextWithOIDC | undefined, key: string, value: unknown, metadata: ClientMetadata) {
    if (key === "application_type") {
      const registering = ctx?.oidc?.route === "registration" && ctx.oidc.body?.application_type === undefined;
      if (registering) metadata.application_type = applicationTypeOf(metadata.redirect_uris);
      return;
    }
    const cleartext = cleartextRedirect(value);
    if (cleartext !== undefined) {
      throw new errors.InvalidClientMetadata(
        `redirect_uris must not use http except on a loopback host (localhost, *.localhost, 127.0.0.0/8, [::1]): ${cleartext}`,
      );
    }
  },
};
