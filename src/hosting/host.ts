import type { ServiceUrl } from "../config.ts";
import { HANDLE } from "../lib/handles.ts";

/** Which site a request's host names: the service itself (the apex), an environment by handle, or neither. */
export type HostTarget = { kind: "apex" } | { kind: "environment"; handle: string } | { kind: "outside" };

/**
 * The host a request was sent to, lower case, without port or trailing dot: its Host header, or with
 * `trustProxy` the first X-Forwarded-Host (what the client asked the proxy for). Empty when none is said.
 */
export function requestHost(request: Request, trustProxy: boolean): string {
  const forwarded = trustProxy ? firstOf(request.headers.get("x-forwarded-host")) : "";
  return hostName(forwarded || (request.headers.get("host") ?? ""));
}

const firstOf = (value: string | null) => (value ?? "").split(",", 1)[0]?.trim() ?? "";

/** `Name.Example.com.:3000` → `name.example.com`; `[::1]:80` → `[::1]` (an address names no environment). */
export function hostName(host: string): string {
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : (host.split(":", 1)[0] as string);
  return name.toLowerCase().replace(/\.$/, "");
}

/** The apex itself, `<handle>.<apex>` (one label, a handle's form), or outside the service. */
export function hostTarget(host: string, service: ServiceUrl): HostTarget {
  if (host === service.apex) return { kind: "apex" };
  const suffix = `.${service.apex}`;
  if (!host.endsWith(suffix)) return { kind: "outside" };
  const handle = host.slice(0, -suffix.length);
  return HANDLE.test(handle) ? { kind: "environment", handle } : { kind: "outside" };
}

/** The service's own URL (the apex): `<scheme>://<apex>[:port]`, no trailing slash. */
export const serviceUrlOf = (service: ServiceUrl): string => siteUrl(service, service.apex);

/** An environment's public URL: `<scheme>://<handle>.<apex>[:port]`, no trailing slash. */
export const environmentUrl = (service: ServiceUrl, handle: string): string =>
  siteUrl(service, `${handle}.${service.apex}`);

const siteUrl = ({ scheme, port }: ServiceUrl, host: string) => `${scheme}://${host}${port === null ? "" : `:${port}`}`;
