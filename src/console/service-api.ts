/** The service's control API at the console's origin (the apex, hosting mode): docs/API.md. */

export interface ServiceEnvironment {
  handle: string;
  organization: string | null;
  url: string;
  activeVersion: string | null;
  createdAt: string;
}

export interface ServiceOrganization {
  handle: string;
  createdAt: string;
}

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

/** A client of the control API as the key signed in. */
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
  };
}

export type ServiceClient = ReturnType<typeof serviceClient>;
