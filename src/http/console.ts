import { Elysia } from "elysia";
import consolePage from "../console/index.html";

/**
 * The console, a page of the public API's own client (src/console/). An HTML import, given to Bun.serve
 * as a route of its own: Elysia would only pass it on without request hooks, and we have them. Run from
 * source, Bun bundles it on the first request (nothing of it loads at start); `bun run build` bundles it
 * into the binary, whose hashed chunks are served from memory with ETags.
 */
export const consoleServeRoutes = { "/console": consolePage };

/** `GET /` has nothing of its own to show. */
export const consoleRedirect = () =>
  new Elysia({ name: "console" }).get(
    "/",
    () => new Response(null, { status: 302, headers: { location: "/console" } }),
  );
