import { Elysia } from "elysia";
import uPlotScript from "uplot/dist/uPlot.iife.min.js" with { type: "text" };
import consolePage from "../console/index.html";

/**
 * The console, a page of the public API's own client (src/console/). An HTML import, given to Bun.serve
 * as a route of its own: Elysia would only pass it on without request hooks, and we have them. Run from
 * source, Bun bundles it on the first request (nothing of it loads at start); `bun run build` bundles it
 * into the binary, whose hashed chunks are served from memory with ETags.
 */
export const consoleServeRoutes = {
  "/console": consolePage,
  // The console's charts library, apart from its bundle (which Bun does not split): the first paint does
  // not wait for it, and the charts `import()` it. The minified script as a module, its version in the path.
  "/console/uplot-1.6.32.js": new Response(`${uPlotScript}\nexport default uPlot;\n`, {
    headers: {
      "content-type": "text/javascript; charset=utf-8",
      "cache-control": "public, max-age=31536000, immutable",
    },
  }),
};

/** `GET /` has nothing of its own to show. */
export const consoleRedirect = () =>
  new Elysia({ name: "console" }).get(
    "/",
    () => new Response(null, { status: 302, headers: { location: "/console" } }),
  );
