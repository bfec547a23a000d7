import { Elysia } from "elysia";
import uPlotFile from "uplot/dist/uPlot.iife.min.js" with { type: "file" };
import consolePage from "../console/index.html";

/**
 * The console, a page of the public API's own client (src/console/). An HTML import, given to Bun.serve
 * as a route of its own: Elysia would only pass it on without request hooks, and we have them. Run from
 * source, Bun bundles it on the first request (nothing of it loads at start); `bun run build` bundles it
 * into the binary, whose hashed chunks are served from memory with ETags.
 */
/** uPlot's version is in the name: the script behind it never changes. */
const UPLOT_PATH = "/chunk-uplot1632.js";
let uPlotScript: Promise<string> | undefined;
/** uPlot's script (`var uPlot = …`) as a module, read once. */
const uPlotModule = () => {
  uPlotScript ??= Bun.file(uPlotFile)
    .text()
    .then((script) => `${script}\nexport default uPlot;\n`);
  return uPlotScript;
};

export const consoleServeRoutes = {
  "/console": consolePage,
  // The console's charts library, apart from its bundle (which Bun's HTML bundle does not split): the first
  // paint does not wait for it, the charts `import()` it. Read on its first request, not at start; named as
  // the console's chunks are, so hosting mode's console site passes it on (hosting/console-site.ts).
  [UPLOT_PATH]: async () =>
    new Response(await uPlotModule(), {
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
