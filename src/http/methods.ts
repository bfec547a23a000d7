/** A route as Elysia lists it (`app.routes`): `WS` for a WebSocket, reached by a GET with an upgrade. */
export interface Route {
  method: string;
  path: string;
}

/** What a request Elysia found no route for was: a path nobody serves, a wrong method, or a WebSocket without upgrade. */
export type Miss = { kind: "unknown" } | { kind: "method"; allow: string[] } | { kind: "upgrade" };

/**
 * Tells a wrong method from an unknown path by the registered routes themselves, so no table is kept by
 * hand. OPTIONS routes (CORS preflights) and ALL routes say nothing about which methods a path has.
 */
export function routeMisses(routes: readonly Route[]): (method: string, path: string) => Miss {
  const byPath = new Map<string, { pattern: RegExp; methods: Set<string> }>();
  for (const route of routes) {
    if (route.method === "OPTIONS" || route.method === "ALL") continue;
    let entry = byPath.get(route.path);
    if (!entry) {
      entry = { pattern: pathPattern(route.path), methods: new Set() };
      byPath.set(route.path, entry);
    }
    entry.methods.add(route.method);
  }
  return (method, path) => {
    const methods = new Set<string>();
    for (const entry of byPath.values()) {
      if (entry.pattern.test(path)) for (const m of entry.methods) methods.add(m);
    }
    if (methods.size === 0 || method === "OPTIONS") return { kind: "unknown" };
    if (method === "GET" && methods.has("WS")) return { kind: "upgrade" };
    const allow = new Set([...methods].map((m) => (m === "WS" ? "GET" : m)));
    // Bun answers HEAD for every GET route (not for a WebSocket's).
    if (methods.has("GET")) allow.add("HEAD");
    return { kind: "method", allow: [...allow].sort() };
  };
}

/** `:name` matches one segment, `*` the rest; everything else literally. */
function pathPattern(path: string): RegExp {
  const segments = path.split("/").map((segment) => {
    if (segment.startsWith(":")) return "[^/]+";
    if (segment === "*") return ".*";
    return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  });
  return new RegExp(`^${segments.join("/")}$`);
}
