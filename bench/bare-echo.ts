// Baseline for bench/run.ts: the least a Bun HTTP server can do with a JSON request.
const server = Bun.serve({
  port: Number(process.env.PORT ?? 0),
  hostname: process.env.HOST ?? "127.0.0.1",
  async fetch(req) {
    const url = new URL(req.url);
    if (url.pathname === "/healthz") return Response.json({ ok: true });
    const body: unknown = await req.json();
    return Response.json({ ok: true, echo: body });
  },
});

console.log(`bare echo serving ${server.url}`);
