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
