import { type OAuthClientProvider, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";

export const REDIRECT = "http://127.0.0.1:9/callback";

/** What an MCP client keeps between runs, in memory; the authorization URL it would open is kept for the test. */
export class MemoryClientProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = "";
  authorizationUrl?: URL;

  get redirectUrl() {
    return REDIRECT;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "Test Agent",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }

  clientInformation() {
    return this.client;
  }

  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }

  tokens() {
    return this.saved;
  }

  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }

  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }

  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }

  codeVerifier() {
    return this.verifier;
  }
}

/**
 * An MCP client's first connection to `${url}/mcp` without a token, as an agent starts: it is refused
 * (401), discovers the authority, registers, and would open the authorization URL it left in
 * `provider.authorizationUrl`; `transport.finishAuth(code)` completes it.
 */
export async function beginSignIn(url: string) {
  const provider = new MemoryClientProvider();
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { authProvider: provider });
  const refused = await new Client({ name: "test-agent", version: "1.0.0" }).connect(transport).then(
    () => null,
    (error: unknown) => error,
  );
  if (!(refused instanceof UnauthorizedError) || !provider.authorizationUrl) {
    throw new Error(`the first connection was not sent to sign in: ${String(refused)}`);
  }
  return { provider, transport, authorizationUrl: provider.authorizationUrl };
}
