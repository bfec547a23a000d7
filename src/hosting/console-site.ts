import type { RequestHandler } from "./dispatcher.ts";

/**
 * The console's page and its chunks (`/console`, `/chunk-<hash>.js|css`): what Bun's router serves for an
 * HTML import. In hosting mode they are asked for like any other path, so that the host is checked first
 * (an unknown one is 404 environment_not_found, as for every other path), then fetched from a loopback
 * server of this process that has the page as its one route (Bun bundles and serves an HTML import only
 * as a route of a server). That server starts on the first request for the page.
 */
export function isConsolePath(url: string): boolean {
  const start = url.startsWith("/") ? 0 : url.indexOf("/", url.indexOf("//") + 2);
  if (start === -1) return false;
  const end = url.indexOf("?", start);
  const path = end === -1 ? url.slice(start) : url.slice(start, end);
  return path === "/console" || /^\/chunk-[a-z0-9]+\.(?:js|css)$/.test(path);
}

export interface ConsoleSite {
  /** Answers a console path by the loopback server's answer. */
  fetch: RequestHandler;
  stop(): void;
}

/** Request headers the page's server reads (caching, encodings): none names the caller or the host. */
const FORWARDED = ["accept", "accept-encoding", "if-none-match", "if-modified-since"];

export function consoleSite(routes: Record<string, unknown>): ConsoleSite {
  let server: Bun.Server<unknown> | null = null;
  const origin = () => {
    server ??= Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      // Built once and served with ETags, as a production server serves it (development's hot reload is
      // Bun's own route's, in `bun run dev`).
      development: false,
      routes: routes as Bun.Serve.Routes<unknown, string>,
      fetch: () => new Response(null, { status: 404 }),
    });
    return `http://127.0.0.1:${server.port}`;
  };
  return {
    async fetch(request) {
      const { pathname, search } = new URL(request.url);
      const headers = new Headers();
      for (const name of FORWARDED) {
        const value = request.headers.get(name);
        if (value !== null) headers.set(name, value);
      }
      const answer = await fetch(`${origin()}${pathname}${search}`, { method: request.method, headers });
      return new Response(answer.body, { status: answer.status, headers: answer.headers });
    },
    stop() {
      server?.stop(true);
      server = null;
    },
  };
}
