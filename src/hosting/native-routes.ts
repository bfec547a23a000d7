import type { AnyElysia } from "elysia";
import { createBunRouteHandler } from "elysia/adapter/bun/compose";
import type { InternalRoute } from "elysia/types";
import type { RequestHandler } from "./dispatcher.ts";

/** An environment's compiled handler of one of its app's routes, by `routeKey`; undefined when it has none. */
export type RouteLookup = (key: string) => RequestHandler | undefined;

const METHODS = new Set(["GET", "HEAD", "OPTIONS", "DELETE", "PATCH", "POST", "PUT"]);

export const routeKey = (method: string, path: string) => `${method} ${path}`;

/**
 * The routes of an app that Bun's router matches in single mode (Elysia's `listen` maps them so): no
 * WebSocket, wildcard, optional parameter or any-method route, which stay with the app's own router.
 */
function nativeOf(app: AnyElysia): InternalRoute[] {
  // Elysia's own condition: without ahead-of-time compiling, or with its system router off, Bun routes nothing.
  if (!app.config.aot || app.config.systemRouter === false) return [];
  const tree = (app as unknown as { routeTree: Record<string, number> }).routeTree;
  return app.router.history.filter(
    (route) =>
      typeof route.handler === "function" &&
      METHODS.has(route.method) &&
      !(route.method === "GET" && `WS_${route.path}` in tree) &&
      !/[*?]/.test(route.path) &&
      (route.path === "/" || !route.path.endsWith("/")),
  );
}

/**
 * An app's routes as single mode's server calls them (each compiled by Elysia for Bun's router, on its
 * first request): hosting mode hands a request Bun's router matched to its environment's, so that its
 * hot path skips the app's own router as single mode's does.
 */
export function routeLookup(app: AnyElysia): RouteLookup {
  const routes = new Map(nativeOf(app).map((route) => [routeKey(route.method, route.path), route]));
  const compiled = new Map<string, RequestHandler>();
  return (key) => {
    let handler = compiled.get(key);
    if (handler) return handler;
    const route = routes.get(key);
    if (!route) return undefined;
    handler = createBunRouteHandler(app, route) as RequestHandler;
    compiled.set(key, handler);
    return handler;
  };
}

/** Bun.serve's `routes` for the routes of `app` (every environment's app has the same), each answered by `routed(its key, its path)`. */
export function nativeRoutes(
  app: AnyElysia,
  routed: (key: string, path: string) => RequestHandler,
): Record<string, Record<string, RequestHandler>> {
  const table: Record<string, Record<string, RequestHandler>> = {};
  for (const route of nativeOf(app)) {
    const path = encodeURI(route.path);
    const methods = table[path] ?? {};
    table[path] = methods;
    methods[route.method] ??= routed(routeKey(route.method, route.path), route.path);
  }
  return table;
}
