/**
 * The environment's built-in sign-in (its OAuth authorization server, auth/authority/), as a public
 * client: authorization code with PKCE S256, back to /console. The code's verifier waits in
 * sessionStorage for the redirect; the access token is the credential the console keeps.
 */

export interface AuthorityMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  registration_endpoint: string;
  /** The resource to ask a token for, when the authority is not the environment itself (hosting mode: the service's). */
  resource?: string;
}

/** What waits in the tab between leaving for the sign-in page and coming back with a code. */
interface PendingSignIn {
  state: string;
  verifier: string;
  clientId: string;
  redirectUri: string;
  resource: string;
  tokenEndpoint: string;
}

export interface SignedIn {
  accessToken: string;
  /** When the token stops being accepted (ms), from `expires_in`. */
  expiresAt: number;
}

const PENDING = "actuate.console.sign-in";
// The client id is no secret and registering once per browser keeps the authority's client records
// from growing with every sign-in; keyed by redirect URI, which is what the registration names.
const CLIENT = "actuate.console.oauth-client";
/** The one scope of the environment's resource (auth/authority/authority.ts RESOURCE_SCOPE). */
const SCOPE = "mcp";

/** The built-in sign-in's metadata at this origin, or null when the environment has none (an external IdP). */
export async function builtInAuthority(): Promise<AuthorityMetadata | null> {
  const own = await authorityAt(`${location.origin}/.well-known/oauth-authorization-server`);
  if (own) return own;
  // Hosting mode: the environment's authority is the service's one (the apex), named by its resource
  // metadata; its scope `mcp` tells it from an external identity provider's (AUTH_ISSUER), not offered here.
  const resource = (await getJson(`${location.origin}/.well-known/oauth-protected-resource`)) as {
    resource?: string;
    authorization_servers?: string[];
    scopes_supported?: string[];
  } | null;
  const server = resource?.authorization_servers?.[0];
  if (!server || !resource?.resource || !resource.scopes_supported?.includes(SCOPE)) return null;
  const metadata = await authorityAt(`${server}/.well-known/oauth-authorization-server`);
  return metadata?.issuer === server ? { ...metadata, resource: resource.resource } : null;
}

async function getJson(url: string): Promise<unknown> {
  const answer = await fetch(url).catch(() => null);
  return answer?.ok ? answer.json().catch(() => null) : null;
}

async function authorityAt(url: string): Promise<AuthorityMetadata | null> {
  const metadata = (await getJson(url)) as Partial<AuthorityMetadata> | null;
  const complete =
    metadata?.issuer && metadata.authorization_endpoint && metadata.token_endpoint && metadata.registration_endpoint;
  return complete ? (metadata as AuthorityMetadata) : null;
}

const redirectUri = () => `${location.origin}/console`;

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");

const randomString = () => base64url(crypto.getRandomValues(new Uint8Array(32)));

async function clientId(metadata: AuthorityMetadata): Promise<string> {
  const cached = JSON.parse(localStorage.getItem(CLIENT) ?? "null") as { clientId: string; redirectUri: string } | null;
  if (cached?.redirectUri === redirectUri()) return cached.clientId;
  const answer = await fetch(metadata.registration_endpoint, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "Actuate console",
      redirect_uris: [redirectUri()],
      // No refresh tokens: the console signs in again when its access token ends.
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    }),
  });
  const body = (await answer.json()) as { client_id?: string; message?: string };
  if (!answer.ok || !body.client_id)
    throw new Error(`could not register the console: ${body.message ?? answer.status}`);
  localStorage.setItem(CLIENT, JSON.stringify({ clientId: body.client_id, redirectUri: redirectUri() }));
  return body.client_id;
}

/** Leaves for the environment's sign-in page; the person comes back to /console with a code. */
export async function beginSignIn(metadata: AuthorityMetadata): Promise<void> {
  const pending: PendingSignIn = {
    state: randomString(),
    verifier: randomString(),
    clientId: await clientId(metadata),
    redirectUri: redirectUri(),
    // The resource is the environment itself (its HTTP API): the issuer's URL, or (hosting mode) the one its metadata names.
    resource: metadata.resource ?? metadata.issuer,
    tokenEndpoint: metadata.token_endpoint,
  };
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(pending.verifier));
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const url = new URL(metadata.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: pending.clientId,
    redirect_uri: pending.redirectUri,
    scope: SCOPE,
    state: pending.state,
    code_challenge: base64url(new Uint8Array(digest)),
    code_challenge_method: "S256",
    resource: pending.resource,
  }).toString();
  location.assign(url);
}

/** This page load's redirect back from the sign-in, until the sign-in page takes it. */
let redirectParams: URLSearchParams | null = null;

/**
 * Keeps the sign-in's redirect back (`?code&state` or `?error`), if this load is one, and clears the
 * address bar at once, before anything else runs: a code must not stay in history or be shared.
 */
export function takeRedirect(): void {
  const params = new URLSearchParams(location.search);
  if (!params.has("state") || !(params.has("code") || params.has("error"))) return;
  history.replaceState(null, "", `${location.pathname}${location.hash}`);
  redirectParams = params;
}

/** The redirect back, once: a sign-in page shown again later (after signing out) has none. */
export function redirectBack(): URLSearchParams | null {
  const params = redirectParams;
  redirectParams = null;
  return params;
}

/**
 * Whether a sign-in left this tab and came back without a redirect: the person went back from the
 * authority's page, or the authority refused the console's remembered client (deleted with a database
 * reset: `invalid_client` is shown there, never redirected). Either way the next attempt registers the
 * console again, so a stale client id cannot block signing in for good.
 */
export function abandonedSignIn(): boolean {
  if (sessionStorage.getItem(PENDING) === null) return false;
  sessionStorage.removeItem(PENDING);
  localStorage.removeItem(CLIENT);
  return true;
}

/** Exchanges the redirect's code for an access token; throws with a message for the person otherwise. */
export async function finishSignIn(params: URLSearchParams): Promise<SignedIn> {
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? "null") as PendingSignIn | null;
  sessionStorage.removeItem(PENDING);
  if (!pending || params.get("state") !== pending.state)
    throw new Error("This sign-in was not started from this tab: sign in again.");
  const refused = params.get("error");
  if (refused) throw new Error(`The sign-in did not complete (${params.get("error_description") ?? refused}).`);
  const answer = await fetch(pending.tokenEndpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: params.get("code") ?? "",
      redirect_uri: pending.redirectUri,
      client_id: pending.clientId,
      code_verifier: pending.verifier,
      resource: pending.resource,
    }),
  });
  const body = (await answer.json()) as { access_token?: string; expires_in?: number; message?: string };
  if (!answer.ok || !body.access_token)
    throw new Error(`The sign-in could not be completed: ${body.message ?? answer.status}`);
  return { accessToken: body.access_token, expiresAt: Date.now() + (body.expires_in ?? 3600) * 1000 };
}
