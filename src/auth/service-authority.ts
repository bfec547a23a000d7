import type { ServiceUrl } from "../config.ts";
import { environmentUrl, hostTarget, serviceUrlOf } from "../config.ts";
import type { Log } from "../observe/log.ts";
import type { Store } from "../store/store.ts";
import type { Authority, ResourceEnvironment } from "./authority/authority.ts";

/** The service's one authority (hosting mode), at the apex: started on first use, closed with the server. */
export interface ServiceAuthority {
  authority: () => Promise<Authority>;
  close(): Promise<void>;
}

/**
 * Hosting mode's authorization server (issue #41 §3): one for the service, issuer SERVICE_URL, serving
 * `/oauth/*` and its metadata on the apex host. People are the service's (`store.users`); a token is for
 * the one environment its resource indicator names (`<environment URL>` or `<environment URL>/mcp`),
 * given to a person that environment was granted to, or for the apex (SERVICE_URL), given to any person. Loaded (oidc-provider with it) on the first request.
 */
export function serviceAuthority({ store, service, log }: { store: Store; service: ServiceUrl; log: Log }) {
  let started: Promise<Authority> | null = null;
  const resources = (resource: string) => resourceEnvironment(store, service, resource);
  const authority = () => {
    started ??= import("./authority/authority.ts").then(({ Authority }) =>
      Authority.start({
        store,
        issuer: serviceUrlOf(service),
        environment: new URL(serviceUrlOf(service)).host,
        resources,
        now: Date.now,
        log,
      }),
    );
    started.catch(() => {
      started = null;
    });
    return started;
  };
  return {
    authority,
    async close() {
      await (await started?.catch(() => null))?.close();
    },
  } satisfies ServiceAuthority;
}

/**
 * The environment of the service a resource indicator names, exactly its URL or its `/mcp`; or the apex
 * itself (exactly SERVICE_URL: the service's console, where a person lists what they may open, with no
 * grant needed); null for anything else.
 */
export async function resourceEnvironment(
  store: Store,
  service: ServiceUrl,
  resource: string,
): Promise<ResourceEnvironment | null> {
  if (resource === serviceUrlOf(service)) {
    return { handle: new URL(resource).host, service: true, mayUse: async () => true };
  }
  const handle = handleOfResource(service, resource);
  const row = handle === null ? null : await store.control.environments.byHandle(handle);
  if (!row) return null;
  return { handle: row.handle as string, mayUse: (user) => environmentAccess(store, row.id, row.organization)(user) };
}

/** `<scheme>://<handle>.<apex>[:port]` or that with `/mcp`: the handle; anything else (another scheme, port, path, host) null. */
export function handleOfResource(service: ServiceUrl, resource: string): string | null {
  const base = resource.endsWith("/mcp") ? resource.slice(0, -"/mcp".length) : resource;
  const url = URL.parse(base);
  if (!url) return null;
  const target = hostTarget(url.hostname, service);
  return target.kind === "environment" && environmentUrl(service, target.handle) === base ? target.handle : null;
}

/**
 * Who may use an environment: anyone of the service when it has no organization (environment 1, single
 * mode's database: its people kept the access they had), else those granted it or its organization.
 */
export const environmentAccess =
  (store: Store, environment: number, organization: number | null) =>
  (user: string): Promise<boolean> =>
    organization === null ? Promise.resolve(true) : store.control.grants.mayUse(user, environment);
