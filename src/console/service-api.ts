/** The service's control API at the console's origin (the apex, hosting mode): docs/API.md. */

export interface ServiceEnvironment {
  handle: string;
  organization: string | null;
  url: string;
  activeVersion: string | null;
  createdAt: string;
  /** The environment it was forked from, and when the service deletes it (docs/API.md, "Forks"). */
  forkedFrom?: string | null;
  expiresAt?: string | null;
  schedulesPaused?: boolean;
}

/** A fork as `POST /environments/{handle}/fork` answers it. */
export interface ServiceFork extends ServiceEnvironment {
  copied: { releases: number; variables: number; entities: number; links: number; files: number };
}

export interface ServiceOrganization {
  handle: string;
  createdAt: string;
}

/** Who may use an organization's environments (all of them), or one environment. */
export interface ServiceGrant {
  user: string;
  organization: string;
  environment: string | null;
  createdAt: string;
}

/** A stored key, never its secret (shown once, when made: `key`). */
export interface ServiceKey {
  id: string;
  prefix: string;
  organization: string | null;
  environment: string | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  key?: string;
}

/** What grants and keys belong to: an organization or one environment (`/orgs/{h}`, `/environments/{h}`). */
export type ServiceScope = { organization: string } | { environment: string };

const scopePath = (scope: ServiceScope) =>
  "organization" in scope
    ? `/orgs/${encodeURIComponent(scope.organization)}`
    : `/environments/${encodeURIComponent(scope.environment)}`;

/** A refusal of the control API, with its message (`{ ok:false, error, message }`). */
export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Whether the console is on the service's apex rather than on an environment: the apex answers
 * `GET /environments` without a credential with 401, an environment has no such route (404).
 */
export async function onServiceApex(): Promise<boolean> {
  const answer = await fetch("/environments?limit=1");
  return answer.status === 401;
}

/** A client of the control API as the key (or the person) signed in. */
export function serviceClient(token: string, onRefused?: () => void) {
  const call = async <T>(path: string, init: RequestInit = {}): Promise<T> => {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${token}`);
    if (init.body) headers.set("content-type", "application/json");
    const answer = await fetch(path, { ...init, headers });
    const body = await answer.json().catch(() => null);
    if (answer.status === 401) onRefused?.();
    if (!answer.ok) {
      throw new ServiceError(answer.status, body?.error ?? "unknown", body?.message ?? `HTTP ${answer.status}`);
    }
    return body as T;
  };
  /** Every page of a list (a caller holds a few hundred environments at most). */
  const all = async <T>(path: string): Promise<T[]> => {
    const items: T[] = [];
    let cursor: string | null = null;
    do {
      const separator = path.includes("?") ? "&" : "?";
      const page: { items: T[]; nextCursor: string | null } = await call(
        `${path}${separator}limit=100${cursor ? `&cursor=${cursor}` : ""}`,
      );
      items.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    return items;
  };
  return {
    environments: () => all<ServiceEnvironment>("/environments"),
    organizations: () => all<ServiceOrganization>("/orgs"),
    createEnvironment: (handle: string, organization: string) =>
      call<ServiceEnvironment>("/environments", { method: "POST", body: JSON.stringify({ handle, organization }) }),
    fork: (source: string, body: { handle: string; data: boolean; secrets: boolean; ttl?: string }) =>
      call<ServiceFork>(`/environments/${encodeURIComponent(source)}/fork`, {
        method: "POST",
        body: JSON.stringify(body),
      }),
    grants: (scope: ServiceScope) => all<ServiceGrant>(`${scopePath(scope)}/grants`),
    grant: (scope: ServiceScope, user: string) =>
      call<ServiceGrant>(`${scopePath(scope)}/grants`, { method: "POST", body: JSON.stringify({ user }) }),
    revokeGrant: (scope: ServiceScope, user: string) =>
      call<unknown>(`${scopePath(scope)}/grants/${encodeURIComponent(user)}`, { method: "DELETE" }),
    keys: (scope: ServiceScope) => all<ServiceKey>(`${scopePath(scope)}/keys`),
    createKey: (scope: ServiceScope) =>
      call<ServiceKey & { key: string }>(`${scopePath(scope)}/keys`, { method: "POST" }),
    revokeKey: (scope: ServiceScope, id: string) =>
      call<ServiceKey>(`${scopePath(scope)}/keys/${encodeURIComponent(id)}`, { method: "DELETE" }),
  };
}

export type ServiceClient = ReturnType<typeof serviceClient>;
